from sparkreport.cli import main

main()
