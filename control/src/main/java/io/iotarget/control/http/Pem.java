package io.iotarget.control.http;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
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
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * TLS material from PEM files, as openssl and certbot write them: a certificate chain (server
 * certificate first) and an unencrypted PKCS#8 private key ({@code BEGIN PRIVATE KEY}; RSA, EC
 * or EdDSA). Stateless; any thread.
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

    /** The server's side: its chain and the key that goes with the chain's first certificate. */
    public static SSLContext serverContext(Path certFile, Path keyFile) throws PemException {
        List<Certificate> chain = certificates(certFile);
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
            context.init(keys.getKeyManagers(), null, null);
            return context;
        } catch (GeneralSecurityException | IOException e) {
            throw new PemException(keyFile, "cannot serve TLS with " + certFile + ": " + e.getMessage());
        }
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

    /** A client's side: trust exactly the certificates in {@code caFile} (a CA, or a self-signed server certificate). */
    public static SSLContext clientContext(Path caFile) throws PemException {
        List<Certificate> trusted = certificates(caFile);
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            for (int i = 0; i < trusted.size(); i++) store.setCertificateEntry("ca" + i, trusted.get(i));
            TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(store);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, trust.getTrustManagers(), null);
            return context;
        } catch (GeneralSecurityException | IOException e) {
            throw new PemException(caFile, "cannot be trusted: " + e.getMessage());
        }
    }

    private static List<Certificate> certificates(Path file) throws PemException {
        try (InputStream in = Files.newInputStream(file)) {
            List<Certificate> chain = List.copyOf(CertificateFactory.getInstance("X.509").generateCertificates(in));
            if (chain.isEmpty()) throw new PemException(file, "no certificate (expected -----BEGIN CERTIFICATE-----)");
            return chain;
        } catch (IOException e) {
            throw new PemException(file, "cannot read: " + e);
        } catch (CertificateException e) {
            throw new PemException(file, "not a PEM certificate chain: " + e.getMessage());
        }
    }

    private static PrivateKey privateKey(Path file) throws PemException {
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
