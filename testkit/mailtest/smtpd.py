# A recording SMTP server for choir's tests (testkit/mailtest): aiosmtpd
# with STARTTLS required, AUTH PLAIN/LOGIN required (over TLS only) for one
# user, each accepted message written atomically as OUTDIR/<n>.json.
# Usage: smtpd.py HOST PORT CERT KEY USER PASSWORD OUTDIR [implicit]
# With "implicit" it speaks TLS from the first byte (SMTPS) instead.
import base64, json, os, signal, ssl, sys, threading, time

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

host, port, cert, key, user, password, outdir = sys.argv[1:8]
implicit = sys.argv[8:9] == ["implicit"]


class Handler:
    async def handle_DATA(self, server, session, envelope):
        n = time.time_ns()
        login = getattr(session, "auth_data", None)
        rec = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "data_b64": base64.b64encode(envelope.original_content).decode(),
            "tls": session.ssl is not None
                   or server.transport.get_extra_info("ssl_object") is not None,
            "auth_mechanism": getattr(session, "choir_mechanism", ""),
            "login": login.decode() if isinstance(login, bytes) else "",
        }
        tmp = os.path.join(outdir, ".%d.tmp" % n)
        with open(tmp, "w") as f:
            json.dump(rec, f)
        os.rename(tmp, os.path.join(outdir, "%d.json" % n))
        return "250 2.0.0 Message accepted"


def authenticate(server, session, envelope, mechanism, auth_data):
    session.choir_mechanism = mechanism
    if isinstance(auth_data, LoginPassword) and auth_data.login.decode() == user \
            and auth_data.password.decode() == password:
        return AuthResult(success=True, auth_data=auth_data.login)
    return AuthResult(success=False, handled=False)


ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
ctx.load_cert_chain(cert, key)
if implicit:
    # The whole connection is TLS; aiosmtpd's auth_require_tls only knows
    # STARTTLS, so it would hide AUTH.
    tls = dict(ssl_context=ctx, auth_require_tls=False)
else:
    tls = dict(tls_context=ctx, require_starttls=True, auth_require_tls=True)
controller = Controller(
    Handler(), hostname=host, port=int(port), authenticator=authenticate,
    auth_required=True, **tls,
)
controller.start()
print("ready", flush=True)
done = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: done.set())
signal.signal(signal.SIGINT, lambda *_: done.set())
done.wait()
controller.stop()
