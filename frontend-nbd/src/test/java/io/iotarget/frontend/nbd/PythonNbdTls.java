package io.iotarget.frontend.nbd;

import io.iotarget.testkit.TestPki;
import io.iotarget.testkit.Tools;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * An NBD client nobody here wrote the TLS of: Python's ssl module (OpenSSL) lists a server's
 * exports over NBD STARTTLS, verifying the server against {@code credentials}' ca-cert.pem
 * (and its name, localhost) and presenting its client-cert.pem with client-key.pem if it has
 * them — all of the certificate file: load_cert_chain sends the certificates after the first
 * as the chain. Prints the export names, sorted, on one line.
 */
final class PythonNbdTls {
    private PythonNbdTls() {
    }

    static Tools.Result list(int port, Path credentials) throws Exception {
        Tools.require("python3", "/usr/bin/python3");
        Path cert = credentials.resolve(TestPki.CLIENT_CERT);
        String script = String.join("\n",
                "import socket, ssl, struct, sys",
                "def exactly(s, n):",
                "    b = b''",
                "    while len(b) < n:",
                "        c = s.recv(n - len(b))",
                "        if not c: raise SystemExit('closed')",
                "        b += c",
                "    return b",
                "def option(s, opt):",
                "    s.sendall(b'IHAVEOPT' + struct.pack('>II', opt, 0))",
                "def reply(s):",
                "    magic, opt, kind, length = struct.unpack('>QIII', exactly(s, 20))",
                "    assert magic == 0x3e889045565a9, hex(magic)",
                "    return kind, exactly(s, length)",
                "s = socket.create_connection(('127.0.0.1', " + port + "))",
                "assert exactly(s, 16) == b'NBDMAGICIHAVEOPT'",
                "exactly(s, 2)",
                "s.sendall(struct.pack('>I', 3))",                       // FIXED_NEWSTYLE | NO_ZEROES
                "option(s, 5)",                                          // NBD_OPT_STARTTLS
                "assert reply(s)[0] == 1",                               // NBD_REP_ACK
                "ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)",         // verifies the server's chain and name
                "ctx.load_verify_locations('" + credentials.resolve(TestPki.CA_CERT) + "')",
                Files.exists(cert) ? "ctx.load_cert_chain('" + cert + "', '" + credentials.resolve(TestPki.CLIENT_KEY) + "')" : "",
                "t = ctx.wrap_socket(s, server_hostname='localhost')",
                "option(t, 3)",                                          // NBD_OPT_LIST
                "names = []",
                "while True:",
                "    kind, data = reply(t)",
                "    if kind == 1: break",
                "    assert kind == 2, kind",                             // NBD_REP_SERVER
                "    n = struct.unpack('>I', data[:4])[0]",
                "    names.append(data[4:4 + n].decode())",
                "print(' '.join(sorted(names)))");
        return Tools.run(60, List.of("/usr/bin/python3", "-c", script));
    }
}
