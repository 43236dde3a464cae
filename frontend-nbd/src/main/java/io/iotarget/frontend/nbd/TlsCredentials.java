package io.iotarget.frontend.nbd;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.transport.Pem;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The NBD server's X.509 credentials, read from one directory laid out as QEMU's
 * {@code tls-creds-x509} for a server endpoint (nbdkit's {@code --tls-certificates} reads the
 * same names):
 * <pre>
 *   ca-cert.pem      the CA(s) whose client certificates are accepted     required
 *   server-cert.pem  the server's certificate chain                        required
 *   server-key.pem   its unencrypted PKCS#8 key                            required
 *   ca-crl.pem       revoked client certificates                           optional
 * </pre>
 * Clients are asked for a certificate but need not show one: one that is shown must be issued
 * by the CA, valid and not revoked, or the handshake fails. Whether an export wants one is the
 * export's {@code allowed_clients}. TLS 1.3 only: every client library of the peers (GnuTLS,
 * OpenSSL, the JDK) speaks it, and it has no renegotiation for a client to abuse.
 * Immutable once loaded; any thread.
 */
final class TlsCredentials {
    static final String CA_CERT = "ca-cert.pem";
    static final String CA_CRL = "ca-crl.pem";
    static final String SERVER_CERT = "server-cert.pem";
    static final String SERVER_KEY = "server-key.pem";
    private static final String[] PROTOCOLS = {"TLSv1.3"};

    private final Path directory;
    private final SSLContext context;

    private TlsCredentials(Path directory, SSLContext context) {
        this.directory = directory;
        this.context = context;
    }

    /** Loads and checks the directory's files; the error names the file and what is wrong with it. */
    static TlsCredentials load(Path directory) throws ControlException {
        if (!directory.isAbsolute()) {
            throw new ControlException(Errno.EINVAL, "certificates=" + directory + " (expected: an absolute directory path)");
        }
        if (!Files.isDirectory(directory)) {
            throw new ControlException(Errno.ENOENT, "certificates=" + directory + ": not a directory (expected: one holding "
                                                     + CA_CERT + ", " + SERVER_CERT + " and " + SERVER_KEY + ", as for qemu's tls-creds-x509)");
        }
        for (String name : new String[]{CA_CERT, SERVER_CERT, SERVER_KEY}) {
            if (!Files.isReadable(directory.resolve(name))) {
                throw new ControlException(Errno.ENOENT, "certificates=" + directory + ": no readable " + name + " (expected: "
                                                         + CA_CERT + ", " + SERVER_CERT + " and " + SERVER_KEY + "; " + CA_CRL + " optional)");
            }
        }
        Path crl = directory.resolve(CA_CRL);
        try {
            SSLContext context = Pem.serverContext(directory.resolve(SERVER_CERT), directory.resolve(SERVER_KEY),
                    directory.resolve(CA_CERT), Files.exists(crl) ? crl : null);
            return new TlsCredentials(directory, context);
        } catch (Pem.PemException e) {
            throw new ControlException(Errno.EINVAL, "certificates=" + directory + ": " + e.getMessage());
        }
    }

    Path directory() {
        return directory;
    }

    /** A server-side engine for one connection: TLS 1.3, asking for (not requiring) a client certificate. */
    SSLEngine newEngine() {
        SSLEngine engine = context.createSSLEngine();
        engine.setUseClientMode(false);
        SSLParameters parameters = engine.getSSLParameters();
        parameters.setProtocols(PROTOCOLS);
        parameters.setWantClientAuth(true);
        engine.setSSLParameters(parameters);
        return engine;
    }
}
