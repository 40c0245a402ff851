"""Inside the sandbox: 127.0.0.1:PORT relayed byte for byte to the model forwarder's unix socket, the one way out.

Usage: python3 model_relay.py SOCKET PORT. Started before the agent; it ends with the sandbox's PID namespace."""

import socket
import sys
import threading


def pipe(src, dst):
    try:
        while data := src.recv(1 << 16):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                s.shutdown(how)
            except OSError:
                pass


def relay(conn, path):
    out = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        out.connect(path)
    except OSError:
        conn.close()
        return
    back = threading.Thread(target=pipe, args=(out, conn), daemon=True)
    back.start()
    pipe(conn, out)
    back.join()
    conn.close()
    out.close()


def main(path, port):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(64)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=relay, args=(conn, path), daemon=True).start()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
