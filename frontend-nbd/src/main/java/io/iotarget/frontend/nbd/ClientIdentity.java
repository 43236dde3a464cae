package io.iotarget.frontend.nbd;

import io.iotarget.iocontrol.HostGroupName;
import io.iotarget.iocontrol.HostIdentity;
import io.iotarget.transport.TlsPsk;

import javax.naming.InvalidNameException;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import javax.security.auth.x500.X500Principal;
import java.net.InetSocketAddress;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.cert.CertificateEncodingException;
import java.security.cert.X509Certificate;
import java.util.HexFormat;
import java.util.List;

/**
 * What the server knows of the client at the other end of a connection: nothing before TLS;
 * after it, whether the client showed a certificate (verified against the server's CA by the
 * TLS handshake) and which, or which pre-shared key's username it proved it holds. Exports are
 * opened by identity ({@link Export#admits}); the IO is charged to the export's group, or with
 * {@code cgroup_per_host} to its child named after the identity ({@link #hostIdentity}).
 * Immutable; any thread.
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

    /**
     * Who this client is for {@code cgroup_per_host}, each kind apart so that no two kinds of
     * identity share a group ({@link HostGroupName}): a certificate by its whole subject DN in
     * RFC 2253 form ({@code CN=alice,O=t1} and {@code CN=alice,O=t2} are two clients), or by its
     * fingerprint when the subject is empty; else — a TLS-PSK handshake, which shows no
     * certificate — the username of its pre-shared key; else — no TLS identity at all — the
     * address it connects from.
     */
    HostIdentity hostIdentity(InetSocketAddress remote) {
        if (certificate != null) {
            X500Principal subject = certificate.getSubjectX500Principal();
            String dn = subject.getName(X500Principal.RFC2253);
            if (dn.isEmpty()) return HostIdentity.certificateFingerprint(fingerprint);
            String cn = commonName(subject);
            return HostIdentity.certificate(dn, cn != null ? cn : fingerprint);   // the second: what versions before kinds named it
        }
        if (pskUsername != null) return HostIdentity.psk(pskUsername);
        return HostIdentity.address(remote.getAddress().getHostAddress());
    }

    /** The subject's CN, or null when it has none (or an empty one). RFC 2253 lists the most specific RDN first. */
    private static String commonName(X500Principal subject) {
        try {
            List<Rdn> rdns = new LdapName(subject.getName(X500Principal.RFC2253)).getRdns();
            for (int i = rdns.size() - 1; i >= 0; i--) {
                Rdn rdn = rdns.get(i);
                if (rdn.getType().equalsIgnoreCase("CN") && rdn.getValue() instanceof String cn && !cn.isEmpty()) return cn;
            }
            return null;
        } catch (InvalidNameException e) {
            throw new IllegalStateException("the JDK's own RFC 2253 form did not parse: " + subject, e);
        }
    }

    @Override
    public String toString() {
        if (!tls) return "plaintext client";
        if (pskUsername != null) return "TLS client with the pre-shared key of " + pskUsername;
        return certificate == null ? "TLS client without a certificate" : "TLS client " + certificate.getSubjectX500Principal().getName();
    }
}
