#!/bin/sh
# Make a chroot root filesystem out of the host's own folders (bind mounts), for trying the
# `chroot` environment on a machine that has no extracted container image:
#   sh campaigns/device-rootfs.sh /tmp/rootfs
set -e
root=${1:-/tmp/rootfs}
mkdir -p "$root"
for entry in /*; do
  name=${entry#/}
  case $name in
    proc|sys|dev|tmp|run) mkdir -p "$root/$name" ;;
    *) if [ -L "$entry" ]; then cp -P "$entry" "$root/"
       elif [ -d "$entry" ] && [ "$entry" != "$root" ]; then
         mkdir -p "$root/$name"; mount --rbind "$entry" "$root/$name"
       fi ;;
  esac
done
echo "rootfs ready at $root"
