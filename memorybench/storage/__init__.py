"""Storage: a local folder or `gs://bucket/prefix` behind one small interface (DESIGN.md 8).

storage = open_storage("gs://bucket/prefix")      # or a local folder
storage.write_bytes("a/b.json", data)              # whole objects only
storage.create_only("a/_SUCCESS", data)            # AlreadyExists the second time
publish_pack(local_pack_dir, storage, "name/runs/<run_id>")   # files, then _SUCCESS
local = fetch_pack(storage, "name/runs/<run_id>", tmp_dir)     # read it from either place
"""

from memorybench.storage._base import SUCCESS, AlreadyExists, Storage, StorageNotFound, join, local_files
from memorybench.storage._gcs import GCSStorage, parse_gs_uri
from memorybench.storage._local import LocalStorage
from memorybench.storage._packs import (
    Published,
    fetch_pack,
    list_packs,
    open_storage,
    open_uri,
    pack_relpath,
    publish_pack,
    storage_uri,
)

__all__ = [
    "SUCCESS",
    "AlreadyExists",
    "GCSStorage",
    "LocalStorage",
    "Published",
    "Storage",
    "StorageNotFound",
    "fetch_pack",
    "join",
    "list_packs",
    "local_files",
    "open_storage",
    "open_uri",
    "pack_relpath",
    "parse_gs_uri",
    "publish_pack",
    "storage_uri",
]
