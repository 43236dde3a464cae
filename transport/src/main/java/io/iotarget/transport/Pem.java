package io.iotarget.transport;

import javax.net.ssl.CertPathTrustManagerParameters;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.cert.CRL;
import java.security.cert.CertPathBuilder;
import java.security.cert.CertStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateNotYetValidException;
import java.security.cert.CollectionCertStoreParameters;
import java.security.cert.PKIXBuilderParameters;
import java.security.cert.PKIXRevocationChecker;
import java.security.cert.X509CertSelector;
import java.security.cert.X509Certificate;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.Collection;
import java.util.EnumSet;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * TLS material from PEM files, as openssl and certbot write them: certificate chains (the
 * certificate first, then its issuers), CA certificates, certificate revocation lists and
 * unencrypted PKCS#8 private keys ({@code BEGIN PRIVATE KEY}; RSA, EC or EdDSA). Used by every
 * TLS endpoint of the server: the control endpoint and the NBD front end. Stateless; any thread.
 */
public final class Pem {
    private static final Pattern PKCS8 = Pattern.compile("-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\\s]+)-----END PRIVATE KEY-----");
    private static final List<String> KEY_ALGORITHMS = List.of("RSA", "EC", "EdDSA");

    private Pem() {
    }

    /** A bad PEM file: which one and what is wrong with it. */
    public static final class PemException extends Exception {
        private static final long serialVersionUID = 1L;
        private final String file;
        private final String problem;

        PemException(Path file, String problem) {
            super(file + ": " + problem);
            this.file = file.toString();
            this.problem = problem;
        }

        public Path file() {
            return Path.of(file);
        }

        public String problem() {
            return problem;
        }
    }

    /** A server that asks no certificate of its clients: its chain and the key of the chain's first certificate. */
    public static SSLContext serverContext(Path certFile, Path keyFile) throws PemException {
        return context(certFile, keyFile, null);
    }

    /**
     * A server that verifies the certificates its clients present: issued by a CA in
     * {@code caFile}, valid now, and — when {@code crlFile} is not null — not revoked by a list
     * in it (a certificate whose issuer has no list there passes, as with GnuTLS). Whether a
     * client must present one is the engine's setting, not the context's.
     */
    public static SSLContext serverContext(Path certFile, Path keyFile, Path caFile, Path crlFile) throws PemException {
        return context(certFile, keyFile, trust(caFile, crlFile));
    }

    /** A client's side: trust exactly the certificates in {@code caFile} (a CA, or a self-signed server certificate). */
    public static SSLContext clientContext(Path caFile) throws PemException {
        List<X509Certificate> trusted = certificates(caFile);
        try {
            TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(anchors(trusted));
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, trust.getTrustManagers(), null);
            return context;
        } catch (GeneralSecurityException | IOException e) {
            throw new PemException(caFile, "cannot be trusted: " + e.getMessage());
        }
    }

    private static SSLContext context(Path certFile, Path keyFile, TrustManager[] trust) throws PemException {
        List<X509Certificate> chain = certificates(certFile);
        checkValid(certFile, chain.getFirst());
        PrivateKey key = privateKey(keyFile);
        if (!signsFor(key, chain.getFirst().getPublicKey())) {
            throw new PemException(keyFile, "is not the key of the first certificate in " + certFile);
        }
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            store.setKeyEntry("server", key, new char[0], chain.toArray(Certificate[]::new));
            KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keys.init(store, new char[0]);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keys.getKeyManagers(), trust, null);
            return context;
        } catch (GeneralSecurityException | IOException e) {
            throw new PemException(keyFile, "cannot serve TLS with " + certFile + ": " + e.getMessage());
        }
    }

    /** PKIX trust in the CAs of {@code caFile}, with revocation checked against {@code crlFile} when there is one. */
    private static TrustManager[] trust(Path caFile, Path crlFile) throws PemException {
        List<X509Certificate> cas = certificates(caFile);
        for (X509Certificate ca : cas) checkValid(caFile, ca);
        Collection<? extends CRL> crls = crlFile == null ? List.of() : crls(crlFile);
        try {
            PKIXBuilderParameters parameters = new PKIXBuilderParameters(anchors(cas), new X509CertSelector());
            if (crlFile == null) {
                parameters.setRevocationEnabled(false);
            } else {
                parameters.addCertStore(CertStore.getInstance("Collection", new CollectionCertStoreParameters(crls)));
                PKIXRevocationChecker checker = (PKIXRevocationChecker) CertPathBuilder.getInstance("PKIX").getRevocationChecker();
                // The lists in the file only: never OCSP or a download; an issuer without a list here passes.
                checker.setOptions(EnumSet.of(PKIXRevocationChecker.Option.PREFER_CRLS, PKIXRevocationChecker.Option.NO_FALLBACK,
                                              PKIXRevocationChecker.Option.SOFT_FAIL));
                parameters.addCertPathChecker(checker);
            }
            TrustManagerFactory factory = TrustManagerFactory.getInstance("PKIX");
            factory.init(new CertPathTrustManagerParameters(parameters));
            return factory.getTrustManagers();
        } catch (GeneralSecurityException | IOException e) {
            throw new PemException(caFile, "cannot verify client certificates with it: " + e.getMessage());
        }
    }

    private static KeyStore anchors(List<X509Certificate> cas) throws GeneralSecurityException, IOException {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        for (int i = 0; i < cas.size(); i++) store.setCertificateEntry("ca" + i, cas.get(i));
        return store;
    }

    /** Whether {@code key} is the private half of {@code certified}: a signature made with one checks out with the other. */
    private static boolean signsFor(PrivateKey key, PublicKey certified) {
        String algorithm = switch (key.getAlgorithm()) {
            case "RSA" -> "SHA256withRSA";
            case "EC" -> "SHA256withECDSA";
            default -> "EdDSA";
        };
        try {
            byte[] probe = "iotarget".getBytes(StandardCharsets.US_ASCII);
            Signature signer = Signature.getInstance(algorithm);
            signer.initSign(key);
            signer.update(probe);
            byte[] signature = signer.sign();
            Signature verifier = Signature.getInstance(algorithm);
            verifier.initVerify(certified);
            verifier.update(probe);
            return verifier.verify(signature);
        } catch (GeneralSecurityException e) {
            return false;                                   // e.g. an EC key for an RSA certificate
        }
    }

    /** An expired certificate is a configuration mistake to name now, not a handshake failure to puzzle over later. */
    private static void checkValid(Path file, X509Certificate certificate) throws PemException {
        try {
            certificate.checkValidity();
        } catch (CertificateExpiredException e) {
            throw new PemException(file, "the certificate of " + certificate.getSubjectX500Principal() + " expired on " + certificate.getNotAfter());
        } catch (CertificateNotYetValidException e) {
            throw new PemException(file, "the certificate of " + certificate.getSubjectX500Principal() + " is valid only from " + certificate.getNotBefore());
        }
    }

    /** The X.509 certificates of a PEM file, in file order; at least one. */
    public static List<X509Certificate> certificates(Path file) throws PemException {
        try (InputStream in = Files.newInputStream(file)) {
            List<X509Certificate> chain = CertificateFactory.getInstance("X.509").generateCertificates(in).stream()
                    .map(X509Certificate.class::cast).toList();
            if (chain.isEmpty()) throw new PemException(file, "no certificate (expected -----BEGIN CERTIFICATE-----)");
            return chain;
        } catch (IOException e) {
            throw new PemException(file, "cannot read: " + e);
        } catch (CertificateException e) {
            throw new PemException(file, "not a PEM certificate chain: " + e.getMessage());
        }
    }

    private static Collection<? extends CRL> crls(Path file) throws PemException {
        try (InputStream in = Files.newInputStream(file)) {
            Collection<? extends CRL> crls = CertificateFactory.getInstance("X.509").generateCRLs(in);
            if (crls.isEmpty()) throw new PemException(file, "no revocation list (expected -----BEGIN X509 CRL-----)");
            return crls;
        } catch (IOException e) {
            throw new PemException(file, "cannot read: " + e);
        } catch (GeneralSecurityException e) {
            throw new PemException(file, "not a PEM certificate revocation list: " + e.getMessage());
        }
    }

    /** The unencrypted PKCS#8 private key of a PEM file. */
    public static PrivateKey privateKey(Path file) throws PemException {
        String text;
        try {
            text = Files.readString(file);
        } catch (IOException e) {
            throw new PemException(file, "cannot read: " + e);
        }
        Matcher m = PKCS8.matcher(text);
        if (!m.find()) {
            throw new PemException(file, "no unencrypted PKCS#8 key (expected -----BEGIN PRIVATE KEY-----; convert with "
                                         + "openssl pkcs8 -topk8 -nocrypt -in OLD -out NEW)");
        }
        PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(Base64.getMimeDecoder().decode(m.group(1)));
        for (String algorithm : KEY_ALGORITHMS) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(spec);
            } catch (InvalidKeySpecException wrongAlgorithm) {
                // try the next one
            } catch (GeneralSecurityException e) {
                throw new PemException(file, e.getMessage());
            }
        }
        throw new PemException(file, "not an RSA, EC or EdDSA private key");
    }
}
