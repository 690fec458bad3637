"""Size and contents of a built wheel, grouped by folder (experiments/packaging.md).

    python -m build --wheel -o /tmp/dist . && python experiments/wheel_contents.py /tmp/dist/*.whl
"""

import collections
import sys
import zipfile


def main(path: str) -> None:
    z = zipfile.ZipFile(path)
    size, count = collections.Counter(), collections.Counter()
    for info in z.infolist():
        parts = info.filename.split("/")
        depth = 3 if len(parts) > 3 and parts[1] == "policies" else 2
        key = "/".join(parts[:depth]) if len(parts) > depth else "/".join(parts[:-1]) or "."
        size[key] += info.file_size
        count[key] += 1
    infos = z.infolist()
    print(f"{path}: {len(infos)} files, {sum(i.file_size for i in infos):,} bytes "
          f"uncompressed, {sum(i.compress_size for i in infos):,} compressed")
    for key, s in sorted(size.items(), key=lambda kv: -kv[1]):
        print(f"{s:>12,} {count[key]:>4}  {key}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
