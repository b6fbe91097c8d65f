"""A real S3-compatible server on loopback (moto's server mode) holding copies of record directories.

`S3Store` starts it on an ephemeral port, makes one bucket, and uploads directories with boto's own
client (s3fs), as skycap's mirror would; `env` is what a viewer started beside it needs to reach it
(test credentials, the endpoint, a cache of its own). No network beyond loopback.
"""

import logging
import os
from pathlib import Path

BUCKET = "records"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
               "AWS_EC2_METADATA_DISABLED": "true"}


class S3Store:
    def __init__(self, cache_home: Path):
        from moto.server import ThreadedMotoServer

        os.environ.update(CREDENTIALS)  # moto's own client checks signatures with these
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # not a line per request on stderr
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        self.env = {**CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint, "XDG_CACHE_HOME": str(cache_home)}
        self.fs = self.filesystem()
        if not self.fs.exists(BUCKET):  # moto keeps its buckets for the process: an earlier store's may be there
            self.fs.mkdir(BUCKET)

    def filesystem(self):
        import s3fs

        return s3fs.S3FileSystem(endpoint_url=self.endpoint, key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                                 secret=CREDENTIALS["AWS_SECRET_ACCESS_KEY"], use_listings_cache=False)

    def url(self, prefix: str) -> str:
        return f"s3://{BUCKET}/{prefix}"

    def upload(self, directory: Path, prefix: str) -> str:
        """Every file under `directory` at `prefix`, its layout kept; the prefix's URL."""
        for path in sorted(Path(directory).rglob("*")):
            if path.is_file():
                self.fs.pipe_file(f"{BUCKET}/{prefix}/{path.relative_to(directory).as_posix()}", path.read_bytes())
        return self.url(prefix)

    def put(self, name: str, data: bytes):
        self.fs.pipe_file(f"{BUCKET}/{name}", data)

    def delete(self, name: str):
        self.fs.rm_file(f"{BUCKET}/{name}")

    def stop(self):
        self.server.stop()
