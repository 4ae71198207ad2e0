"""The .deb files MySQL's server and client need, from a Debian Packages index.

Usage: mysql_debs.py PACKAGES.xz PACKAGE...  (prints one pool path per line)

Follows Depends and Pre-Depends (the first of each alternative, a virtual package through
the first package that provides it), leaving out what only a package's maintainer scripts use.
"""

import lzma
import sys

# Used by maintainer scripts, not by mysqld or mysql: not unpacked.
SKIP = {
    "adduser", "debconf", "debconf-2.0", "dpkg", "init-system-helpers", "libc-bin",
    "lsb-base", "mariadb-common", "mysql-common", "passwd", "perl", "perl-base", "psmisc",
    "tzdata",
}


def index(path):
    packages, fields = {}, {}
    for line in lzma.open(path, "rt", encoding="utf-8"):
        if line == "\n":
            if fields:
                packages.setdefault(fields["Package"], fields)
            fields = {}
        elif line[0] not in " \t":
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    if fields:
        packages.setdefault(fields["Package"], fields)
    return packages


def main():
    packages = index(sys.argv[1])
    provides = {}
    for name, fields in packages.items():
        for p in fields.get("Provides", "").split(","):
            p = p.strip().split(" ")[0]
            if p:
                provides.setdefault(p, name)
    todo, seen = list(sys.argv[2:]), set()
    while todo:
        name = todo.pop().split(":")[0]
        if name in SKIP:
            continue
        name = name if name in packages else provides.get(name, name)
        if name in seen:
            continue
        if name not in packages:
            sys.exit(f"{name}: not in the index")
        seen.add(name)
        fields = packages[name]
        for dep in (fields.get("Depends", "") + "," + fields.get("Pre-Depends", "")).split(","):
            first = dep.split("|")[0].strip()
            if first:
                todo.append(first.split(" ")[0])
    for name in sorted(seen):
        print(packages[name]["Filename"])


main()
