"""Where the restart path keeps commits: in memory on every host of the job (/dev/shm, a tmpfs), one
file per job, so that workers started again after a failure resume from the newest commit of any
host that is left, without a shared file system. One rank per host (local rank 0) writes; every rank
holds the same state after a sync, so every host's copy is the job's.

A commit is written to a temporary file and renamed over the previous one: a crash while writing
leaves the previous commit whole."""
import os
import struct

_MAGIC = b"KOLOCMT1"


class CommitStore:
    def __init__(self, job_id, root=None):
        root = root or os.environ.get("KOLO_ELASTIC_COMMIT_DIR") or "/dev/shm"
        self.directory = os.path.join(root, "kolo-elastic-%s" % job_id)
        self.path = os.path.join(self.directory, "commit")

    def write(self, number, dump):
        """Stores commit `number`, replacing the previous commit atomically. `dump(file)` writes the
        payload (straight into the file: a ResNet-50-sized state is not copied once more in memory)."""
        os.makedirs(self.directory, exist_ok=True)
        tmp = "%s.%d.tmp" % (self.path, os.getpid())
        with open(tmp, "wb") as f:
            f.write(_MAGIC + struct.pack("<qq", number, 0))
            dump(f)
            length = f.tell() - len(_MAGIC) - 16
            f.seek(len(_MAGIC) + 8)
            f.write(struct.pack("<q", length))
        os.replace(tmp, self.path)

    def newest(self, with_payload=True):
        """(number, payload) of the commit kept here, or (-1, None): none, or one cut short. Without
        the payload, only the header is read."""
        try:
            with open(self.path, "rb") as f:
                head = f.read(len(_MAGIC) + 16)
                if len(head) < len(_MAGIC) + 16 or head[:len(_MAGIC)] != _MAGIC:
                    return -1, None
                number, length = struct.unpack("<qq", head[len(_MAGIC):])
                whole = os.fstat(f.fileno()).st_size == len(head) + length
                payload = f.read(length) if with_payload and whole else None
        except FileNotFoundError:
            return -1, None
        return (number, payload) if whole else (-1, None)

    def clear(self):
        """The job is over: its commits go (this host's)."""
        try:
            for name in os.listdir(self.directory):
                os.unlink(os.path.join(self.directory, name))
            os.rmdir(self.directory)
        except FileNotFoundError:
            pass
