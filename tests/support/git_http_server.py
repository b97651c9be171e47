#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# Serves the git repositories below --root over smart HTTP on 127.0.0.1 (or --bind), by running
# `git http-backend` as a CGI program for every request, for the git source tests.
# With --user/--password, basic authentication is required; with --token, a bearer token is
# accepted too. With --redirect-to URL, every request is answered with a 302 to URL followed by
# the request's path. With --log-auth FILE, a line "METHOD PATH authorization=yes|no" is
# appended to FILE for every request. The chosen port is written to --port-file once the
# server listens.
import argparse
import base64
import http.server
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--user")
    ap.add_argument("--password")
    ap.add_argument("--token")
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--redirect-to")
    ap.add_argument("--log-auth")
    args = ap.parse_args()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):
            sys.stderr.write("git-http: " + (fmt % a) + "\n")

        def authorized(self):
            if not args.user and not args.token:
                return True
            got = self.headers.get("Authorization", "")
            if args.token and got == "Bearer " + args.token:
                return True
            if args.user:
                want = base64.b64encode(
                    ("%s:%s" % (args.user, args.password)).encode()).decode()
                if got == "Basic " + want:
                    return True
            return False

        def handle_any(self):
            if args.log_auth:
                with open(args.log_auth, "a") as log:
                    log.write("%s %s authorization=%s\n" % (
                        self.command, self.path,
                        "yes" if "Authorization" in self.headers else "no"))
            if args.redirect_to:
                self.send_response(302)
                self.send_header("Location", args.redirect_to + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if not self.authorized():
                body = b"authentication required\n"
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True
                return
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length) if length else b""
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_PROJECT_ROOT": args.root,
                "GIT_HTTP_EXPORT_ALL": "1",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(data)),
                "REMOTE_USER": args.user or "",
                "REMOTE_ADDR": "127.0.0.1",
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            }
            out = subprocess.run(["git", "http-backend"], input=data, env=env,
                                 capture_output=True, check=False).stdout
            head, _, body = out.partition(b"\r\n\r\n")
            if not _:
                head, _, body = out.partition(b"\n\n")
            status = 200
            headers = []
            for line in head.decode("latin-1").splitlines():
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.strip().split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = handle_any
        do_POST = handle_any

    srv = http.server.ThreadingHTTPServer((args.bind, 0), Handler)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
