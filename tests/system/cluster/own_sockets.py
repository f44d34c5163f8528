"""Run on every rank of a job: after an allreduce, prints each IP socket this process holds, as
'rank R socket PROTO ADDRESS:PORT STATE', read from /proc (its own file descriptors and its network
namespace's socket tables). The test compares them with the sockets docs/faults-and-security.md lists."""
import os
import socket
import struct

import torch

import kolo.torch as kolo

STATES = {"01": "ESTABLISHED", "07": "UNCONNECTED", "0A": "LISTEN"}


def address(text):
    ip, port = text.split(":")
    if len(ip) == 8:
        ip = socket.inet_ntoa(struct.pack("<I", int(ip, 16)))
    else:
        words = bytes.fromhex(ip)
        ip = socket.inet_ntop(socket.AF_INET6, b"".join(words[i:i + 4][::-1] for i in range(0, 16, 4)))
    return "%s:%d" % (ip, int(port, 16))


def sockets():
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = []
    for proto in ("udp", "tcp", "udp6", "tcp6"):
        with open("/proc/self/net/" + proto) as table:
            next(table)
            for line in table:
                fields = line.split()
                if fields[9] in inodes:
                    found.append((proto, address(fields[1]), STATES.get(fields[3], fields[3])))
    return found


kolo.init()
total = kolo.allreduce(torch.ones(4), op=kolo.Sum, name="x")
assert total.tolist() == [kolo.size()] * 4, total
for proto, where, state in sockets():
    print("rank %d socket %s %s %s" % (kolo.rank(), proto, where, state), flush=True)
kolo.shutdown()
