package cluster

// DNSQuery (python3, which lab hosts have) asks the DNS server argv[1] for
// the A record of kubernetes.default.svc.cluster.local and prints it, or
// "no answer" after 2 minutes: on a loaded machine kube-proxy's rules for a
// new Service and its endpoints can lag the rollout by tens of seconds
// (seen in a full CI run: 10 tries of 5 s were not enough).
const DNSQuery = `import socket, struct, sys, time
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
for part in "kubernetes.default.svc.cluster.local".split("."):
    q += bytes([len(part)]) + part.encode()
q += b"\0" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
r = None
deadline = time.time() + 120
while r is None and time.time() < deadline:
    try:
        s.sendto(q, (sys.argv[1], 53))
        r = s.recv(512)
    except OSError:
        time.sleep(1)
print("no answer" if r is None else ".".join(str(b) for b in r[-4:]))
`
