"""Inside the sandbox: an MCP server on standard input and output (JSON-RPC 2.0, one message per line) offering the
tools of the host's ToolService (swecl.agents.tool_service): their list is FOLDER/tools.json, and each call is one line
to FOLDER/tools.sock and one line back. It holds nothing itself: what a tool reads (the memory) stays on the host.

Usage: python3 mcp_tools.py FOLDER. The agent starts it (its MCP configuration names it) and ends it."""

import json
import socket
import sys

PROTOCOL = "2025-06-18"  # answered when the client names none
MAX_ANSWER = 8 << 20  # bytes read back from the host: its answer is ASCII JSON of at most 256 K characters


def host_call(folder, name, arguments):
    "The host's answer to one call: {'text': ..., 'error': bool}."
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(300)
    try:
        s.connect(folder + "/tools.sock")
        s.sendall(json.dumps({"name": name, "arguments": arguments}).encode("utf-8") + b"\n")
        data = b""
        while b"\n" not in data and len(data) <= MAX_ANSWER:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
        got = json.loads(data.partition(b"\n")[0].decode("utf-8"))
        return {"text": str(got["text"]), "error": bool(got["error"])}
    except (OSError, ValueError, KeyError, TypeError) as e:
        return {"text": "the tool service did not answer (%s)" % type(e).__name__, "error": True}
    finally:
        s.close()


def result(msg, tools, folder):
    "The result of a request, or None for a method there is no such thing as."
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        version = params.get("protocolVersion") if isinstance(params, dict) else None
        return {"protocolVersion": version if isinstance(version, str) else PROTOCOL,
                "capabilities": {"tools": {"listChanged": False}}, "serverInfo": {"name": "swecl", "version": "1"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": tools}
    if method == "tools/call" and isinstance(params, dict):
        args = params.get("arguments")
        got = host_call(folder, params.get("name"), args if args is not None else {})
        return {"content": [{"type": "text", "text": got["text"]}], "isError": got["error"]}
    return None


def answer(line, tools, folder):
    "The response line to one message line, or None (a notification, or a response of the client's)."
    try:
        msg = json.loads(line)
    except ValueError:
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
    if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
        return None
    got = result(msg, tools, folder)
    if got is None:
        return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "method not found"}}
    return {"jsonrpc": "2.0", "id": msg["id"], "result": got}


def main(folder):
    with open(folder + "/tools.json", "rb") as f:
        tools = json.loads(f.read().decode("utf-8"))
    for raw in sys.stdin.buffer:  # MCP's stdio is UTF-8, whatever the locale or PYTHONIOENCODING say
        line = raw.decode("utf-8", "replace")
        if not line.strip():
            continue
        out = answer(line, tools, folder)
        if out is not None:
            sys.stdout.buffer.write((json.dumps(out) + "\n").encode("utf-8"))
            sys.stdout.buffer.flush()


if __name__ == "__main__":
    main(sys.argv[1])
