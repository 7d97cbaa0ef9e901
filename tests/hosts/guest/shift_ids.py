#!/usr/bin/python3
"""shift_ids.py IMAGE_DIR USER: turns a copy of root's sandbox image into what USER's own rootless
build leaves (src/image/build.cc, give_agent_files_to_user in src/image/tree.cc, docs/images.md):
- the image directory and image.json belong to USER;
- in rootfs/, inside id n (0..65535) becomes the start of USER's subordinate range + n, except the
  image's `agent` (1000), whose files belong to USER itself; set-id bits, which chown clears, are
  restored (a rootless build keeps them: tar unpacks as root of the mapped namespace);
- device nodes go: the rootless build unpacks without /dev's nodes (every sandbox mounts its own).
Runs as root in the test host.
"""
import os
import pwd
import stat
import sys

AGENT = 1000


def subid_start(path, user):
    for line in open(path):
        name, start, count = line.strip().split(":")
        if name == user:
            return int(start)
    sys.exit(f"shift_ids: {user} has no range in {path}")


def main():
    image, user = sys.argv[1], sys.argv[2]
    pw = pwd.getpwnam(user)
    us, gs = subid_start("/etc/subuid", user), subid_start("/etc/subgid", user)
    os.chown(image, pw.pw_uid, pw.pw_gid)
    os.chown(os.path.join(image, "image.json"), pw.pw_uid, pw.pw_gid)
    root = os.path.join(image, "rootfs")
    count = 0
    for top, dirs, files in os.walk(root):
        # directories are handled as `top` when walked; symbolic links to directories are not walked
        links = [d for d in dirs if os.path.islink(os.path.join(top, d))]
        for path in [top] + [os.path.join(top, n) for n in files + links]:
            st = os.lstat(path)
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                os.unlink(path)
                continue
            uid = pw.pw_uid if st.st_uid == AGENT else us + st.st_uid
            gid = pw.pw_gid if st.st_gid == AGENT else gs + st.st_gid
            os.lchown(path, uid, gid)
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                os.chmod(path, stat.S_IMODE(st.st_mode))
            count += 1
    print(f"shift_ids: {count} entries of {root} moved onto {user}'s range {us} (agent -> {pw.pw_uid})")


if __name__ == "__main__":
    main()
