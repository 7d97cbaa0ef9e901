#!/usr/bin/env bash
# The linux layer's folder is on every include view as "linux/", where the kernel's own headers live too
# (<linux/limits.h> is included by glibc's <limits.h>): a file of src/linux/ named like one of the
# kernel's would be found in its place. Fails naming any such file.
cd "$(dirname "$0")/../.."
include_dir=${TNK_KERNEL_HEADERS:-/usr/include/linux}
[ -d "$include_dir" ] || { echo "no kernel headers at $include_dir (apt-get install linux-libc-dev)"; exit 1; }
clashes=""
for f in src/linux/*.h; do
  [ -e "$include_dir/$(basename "$f")" ] && clashes+=" $f"
done
if [ -n "$clashes" ]; then
  echo "src/linux/ headers named like the kernel's in $include_dir:$clashes"
  exit 1
fi
echo "no src/linux/ header shadows one of $include_dir"
