package io.iotarget.frontend.nbd;

import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.cert.CertificateEncodingException;
import java.security.cert.X509Certificate;
import java.util.HexFormat;

/**
 * What the server knows of the client at the other end of a connection: nothing before TLS;
 * after it, whether the client showed a certificate (verified against the server's CA by the
 * TLS handshake) and which. Exports are opened by identity ({@link Export#admits}); the IO is
 * still charged to the export's group, never to an identity. Immutable; any thread.
 *
 * @param tls         the connection runs TLS
 * @param certificate the client's verified certificate, or null (no TLS, or none shown)
 * @param fingerprint its SHA-256 fingerprint as {@link AllowedClient} spells it, or null
 */
record ClientIdentity(boolean tls, X509Certificate certificate, String fingerprint) {
    /** A client before (or without) TLS. */
    static final ClientIdentity PLAINTEXT = new ClientIdentity(false, null, null);

    /** The identity a finished TLS handshake established. */
    static ClientIdentity of(SSLSession session) {
        try {
            X509Certificate peer = (X509Certificate) session.getPeerCertificates()[0];
            return new ClientIdentity(true, peer, fingerprint(peer));
        } catch (SSLPeerUnverifiedException noCertificate) {
            return new ClientIdentity(true, null, null);
        }
    }

    /** SHA-256 of the certificate's DER encoding, as {@code openssl x509 -fingerprint -sha256} prints it (AB:CD:...). */
    static String fingerprint(X509Certificate certificate) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(certificate.getEncoded());
            return HexFormat.ofDelimiter(":").withUpperCase().formatHex(digest);
        } catch (NoSuchAlgorithmException | CertificateEncodingException e) {
            throw new IllegalStateException("cannot fingerprint a certificate the handshake accepted", e);
        }
    }

    @Override
    public String toString() {
        if (!tls) return "plaintext client";
        return certificate == null ? "TLS client without a certificate" : "TLS client " + certificate.getSubjectX500Principal().getName();
    }
}
