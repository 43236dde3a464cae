package io.iotarget.frontend.nbd;

import io.iotarget.transport.TlsPsk;

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
 * TLS handshake) and which, or which pre-shared key's username it proved it holds. Exports are opened by identity ({@link Export#admits}); the IO is
 * still charged to the export's group, never to an identity. Immutable; any thread.
 *
 * @param tls         the connection runs TLS
 * @param certificate the client's verified certificate, or null (no TLS, or none shown)
 * @param fingerprint its SHA-256 fingerprint as {@link AllowedClient} spells it, or null
 * @param pskUsername the username of the pre-shared key the client proved it holds ({@link TlsPsk}), or null
 */
record ClientIdentity(boolean tls, X509Certificate certificate, String fingerprint, String pskUsername) {
    /** A client before (or without) TLS. */
    static final ClientIdentity PLAINTEXT = new ClientIdentity(false, null, null, null);

    /** The identity a finished TLS handshake established. */
    static ClientIdentity of(SSLSession session) {
        try {
            X509Certificate peer = (X509Certificate) session.getPeerCertificates()[0];
            return new ClientIdentity(true, peer, fingerprint(peer), null);
        } catch (SSLPeerUnverifiedException noCertificate) {
            try {
                if (session.getPeerPrincipal() instanceof TlsPsk.Identity psk) return new ClientIdentity(true, null, null, psk.name());
            } catch (SSLPeerUnverifiedException noKey) {
                // neither
            }
            return new ClientIdentity(true, null, null, null);
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
        if (pskUsername != null) return "TLS client with the pre-shared key of " + pskUsername;
        return certificate == null ? "TLS client without a certificate" : "TLS client " + certificate.getSubjectX500Principal().getName();
    }
}
