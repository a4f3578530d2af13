#!/usr/bin/env python3
"""Flips one byte of a generated data file the way damage on the disk would: the file's mtime is
put back and its identity sidecar (FILE.id.json) is made to vouch for the new ctime, so the
gate's data cache trusts the file and only the read verification can notice. Running it again
with the same offset flips the byte back.

    tools/drills/plant_byte.py target/gds-gate/data/gds-gate-s17-34359738368.bin 27917287425

Then run the suite: every trial reading the file must fail with `first wrong byte at offset
27917287425 of ...`. If the run says `data: generated` instead, the byte fell in a block the
cache spot-checks on reuse (a handful per file): pick another offset.
"""

import json
import os
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plant_byte.py DATA_FILE OFFSET")
    path, offset = sys.argv[1], int(sys.argv[2])
    sidecar = path + ".id.json"
    before = os.stat(path)
    if not 0 <= offset < before.st_size:
        sys.exit("offset %d is outside `%s` (%d bytes)" % (offset, path, before.st_size))
    with open(sidecar) as f:
        identity = json.load(f)
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0x40]))
        f.flush()
        os.fsync(f.fileno())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    identity["ctime_ns"] = after.st_ctime_ns
    tmp = sidecar + ".partial"
    with open(tmp, "w") as f:
        json.dump(identity, f, indent=2)
    os.replace(tmp, sidecar)
    print("byte %d of `%s`: 0x%02x -> 0x%02x" % (offset, path, byte, byte ^ 0x40))


if __name__ == "__main__":
    main()
