from sparkreport.cli import entry

entry()
