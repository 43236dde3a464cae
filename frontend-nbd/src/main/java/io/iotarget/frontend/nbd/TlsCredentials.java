package io.iotarget.frontend.nbd;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.transport.Pem;
import io.iotarget.transport.TlsPsk;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The NBD server's TLS credentials: pre-shared keys ({@code tls/psk_file}, {@link TlsPsk}),
 * X.509 credentials, or both. The X.509 ones are read from one directory laid out as QEMU's
 * {@code tls-creds-x509} for a server endpoint (nbdkit's {@code --tls-certificates} reads the
 * same names):
 * <pre>
 *   ca-cert.pem      the CA(s) whose client certificates are accepted     required
 *   server-cert.pem  the server's certificate chain                        required
 *   server-key.pem   its key: PKCS#1, SEC1, PKCS#8 or encrypted PKCS#8    required
 *   server-key.pass  the passphrase of an encrypted key, on its first line  optional
 *   ca-crl.pem       revoked client certificates                           optional
 * </pre>
 * (QEMU takes an encrypted key's passphrase from a secret object, {@code passwordid}; a file in
 * the directory is the nearest thing a server reading only its directory can have.)
 * Clients are asked for a certificate but need not show one: one that is shown must be issued
 * by the CA, valid and not revoked, or the handshake fails. Whether an export wants one is the
 * export's {@code allowed_clients}. TLS 1.3, and 1.2 with ECDHE and AEAD ciphers only, for
 * nbd-client (the kernel client's helper), whose GnuTLS priority allows nothing but 1.2; the
 * transport refuses a 1.2 renegotiation. Immutable once loaded; any thread.
 */
final class TlsCredentials {
    static final String CA_CERT = "ca-cert.pem";
    static final String CA_CRL = "ca-crl.pem";
    static final String SERVER_CERT = "server-cert.pem";
    static final String SERVER_KEY = "server-key.pem";
    static final String SERVER_KEY_PASSPHRASE = "server-key.pass";
    private static final String[] PROTOCOLS = {"TLSv1.3", "TLSv1.2"};
    /** TLS 1.3's suites, then 1.2's with forward secrecy and authenticated encryption. */
    private static final String[] CIPHER_SUITES = {
            "TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"};

    /** The certificates' directory, or null: pre-shared keys only. */
    private final Path directory;
    private final SSLContext context;
    /** The pre-shared keys ({@code tls/psk_file}), or null: certificates only. */
    private final TlsPsk psk;

    private TlsCredentials(Path directory, SSLContext context, TlsPsk psk) {
        this.directory = directory;
        this.context = context;
        this.psk = psk;
    }

    /** The server's credentials from certificates (may be null) and pre-shared keys (may be null); null when neither. */
    static TlsCredentials of(TlsCredentials certificates, TlsPsk psk) {
        if (certificates == null && psk == null) return null;
        return certificates == null ? new TlsCredentials(null, null, psk) : new TlsCredentials(certificates.directory, certificates.context, psk);
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
        Path passphrase = directory.resolve(SERVER_KEY_PASSPHRASE);
        try {
            SSLContext context = Pem.serverContext(directory.resolve(SERVER_CERT), directory.resolve(SERVER_KEY),
                    Files.exists(passphrase) ? passphrase : null, directory.resolve(CA_CERT), Files.exists(crl) ? crl : null);
            return new TlsCredentials(directory, context, null);
        } catch (Pem.PemException e) {
            throw new ControlException(Errno.EINVAL, "certificates=" + directory + ": " + e.getMessage());
        }
    }

    /** The certificates' directory, or null. */
    Path directory() {
        return directory;
    }

    /** The pre-shared keys, or null. */
    TlsPsk psk() {
        return psk;
    }

    /**
     * A server-side engine for one connection: with certificates, TLS 1.3 or 1.2, asking for (not
     * requiring) a client certificate; with pre-shared keys, TLS 1.3 with a key; with both, the
     * client's ClientHello picks ({@link TlsPsk#newEngine}).
     */
    SSLEngine newEngine() {
        if (context == null) return psk.newEngine(null);
        return psk == null ? certificateEngine() : psk.newEngine(this::certificateEngine);
    }

    private SSLEngine certificateEngine() {
        SSLEngine engine = context.createSSLEngine();
        engine.setUseClientMode(false);
        SSLParameters parameters = engine.getSSLParameters();
        parameters.setProtocols(PROTOCOLS);
        parameters.setCipherSuites(CIPHER_SUITES);
        parameters.setWantClientAuth(true);
        engine.setSSLParameters(parameters);
        return engine;
    }
}
