package io.iotarget.transport;

import org.bouncycastle.asn1.ASN1ObjectIdentifier;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.openssl.EncryptionException;
import org.bouncycastle.openssl.PEMEncryptedKeyPair;
import org.bouncycastle.openssl.PEMKeyPair;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.openssl.jcajce.JceOpenSSLPKCS8DecryptorProviderBuilder;
import org.bouncycastle.openssl.jcajce.JcePEMDecryptorProviderBuilder;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.pkcs.PKCS8EncryptedPrivateKeyInfo;
import org.bouncycastle.pkcs.PKCSException;

import javax.net.ssl.CertPathTrustManagerParameters;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedTrustManager;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.Provider;
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
import java.util.Collection;
import java.util.EnumSet;
import java.util.List;

/**
 * TLS material from PEM files, as openssl, GnuTLS's certtool and certbot write them: certificate
 * chains (the certificate first, then its issuers), CA certificates, certificate revocation lists
 * and private keys in every PEM form ({@link #privateKey(Path, Path)}). Used by every
 * TLS endpoint of the server: the control endpoint and the NBD front end. Stateless; any thread.
 */
public final class Pem {
    /**
     * Bouncy Castle's JCA provider, for decrypting keys only (PBES2 asks for AES/CBC/PKCS7Padding,
     * which only it names so); never installed, so the rest of the JVM keeps the JDK's providers.
     */
    private static final Provider BOUNCY_CASTLE = new BouncyCastleProvider();
    private static final List<String> KEY_ALGORITHMS = List.of("RSA", "EC", "EdDSA", "Ed25519", "Ed448");

    private Pem() {
    }

    /** A bad PEM file (or pre-shared key file, {@link TlsPsk}): which one and what is wrong with it. */
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

    /**
     * A server that asks no certificate of its clients: its chain and the key of the chain's
     * first certificate ({@code passphraseFile}: see {@link #privateKey}; null for a key in clear).
     */
    public static SSLContext serverContext(Path certFile, Path keyFile, Path passphraseFile) throws PemException {
        return context(certFile, keyFile, passphraseFile, null);
    }

    /**
     * A server that verifies the certificates its clients present: issued by a CA in
     * {@code caFile}, valid now, and — when {@code crlFile} is not null — not revoked by a list
     * in it (a certificate whose issuer has no list there passes, as with GnuTLS). Whether a
     * client must present one is the engine's setting, not the context's.
     */
    public static SSLContext serverContext(Path certFile, Path keyFile, Path passphraseFile, Path caFile, Path crlFile) throws PemException {
        return context(certFile, keyFile, passphraseFile, trust(caFile, crlFile));
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

    private static SSLContext context(Path certFile, Path keyFile, Path passphraseFile, TrustManager[] trust) throws PemException {
        List<X509Certificate> chain = certificates(certFile);
        for (X509Certificate certificate : chain) checkValid(certFile, certificate);
        checkIssuers(certFile, chain);
        PrivateKey key = privateKey(keyFile, passphraseFile);
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
            return new TrustManager[]{new NamingNoIssuers((X509ExtendedTrustManager) factory.getTrustManagers()[0], caFile, cas)};
        } catch (GeneralSecurityException | IOException e) {
            throw new PemException(caFile, "cannot verify client certificates with it: " + e.getMessage());
        }
    }

    /**
     * The PKIX checks of {@code trusted}, with an empty list of accepted issuers: the server's
     * CertificateRequest then names no CAs (certificate_authorities is left out). A GnuTLS client
     * without a selection callback — libnbd, qemu, nbd-client — picks its certificate by that list
     * and by the signature_algorithms beside it: it sends one only if a CA named there issued it
     * <em>and</em> the key's algorithm is among those the schemes map to. The JDK's TLS 1.3 list
     * has only RSA-PSS schemes for RSA (rsa_pkcs1_* go in signature_algorithms_cert, which
     * GnuTLS ignores), which GnuTLS maps to RSA-PSS keys, never to an ordinary RSA key: every
     * RSA client certificate was withheld. With no CA named, GnuTLS sends its one certificate,
     * whatever its key, and signs with an rsa_pss_rsae scheme; the handshake still verifies it
     * against the CA file, so naming nothing loses nothing but a hint. A refused client
     * certificate's exception says whose it was and, when the chain it came with reaches no CA of
     * the file, that an intermediate is missing: the handshake's failure carries it to the log.
     */
    private static final class NamingNoIssuers extends X509ExtendedTrustManager {
        private final X509ExtendedTrustManager trusted;
        private final Path caFile;
        private final List<X509Certificate> cas;

        NamingNoIssuers(X509ExtendedTrustManager trusted, Path caFile, List<X509Certificate> cas) {
            this.trusted = trusted;
            this.caFile = caFile;
            this.cas = cas;
        }

        /** {@code e}, said of the client's certificate: whose, issued by whom, and what is missing when its chain reaches no CA here. */
        private CertificateException refused(X509Certificate[] chain, CertificateException e) {
            if (chain == null || chain.length == 0) return e;
            X509Certificate last = chain[chain.length - 1];
            boolean issuerHere = cas.stream().anyMatch(ca -> ca.getSubjectX500Principal().equals(last.getIssuerX500Principal()));
            String why = issuerHere ? e.getMessage()
                    : caFile + " has no CA " + last.getIssuerX500Principal() + " (another CA's certificate; or an intermediate CA's, "
                      + "and then the intermediate must follow it in the client's certificate file, or be in " + caFile + ")";
            return new CertificateException("client certificate " + chain[0].getSubjectX500Principal() + " issued by "
                                            + chain[0].getIssuerX500Principal() + ", sent with " + (chain.length - 1)
                                            + " issuer certificate(s), refused: " + why, e);
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return new X509Certificate[0];
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            try {
                trusted.checkClientTrusted(chain, authType);
            } catch (CertificateException e) {
                throw refused(chain, e);
            }
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
            try {
                trusted.checkClientTrusted(chain, authType, socket);
            } catch (CertificateException e) {
                throw refused(chain, e);
            }
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
            try {
                trusted.checkClientTrusted(chain, authType, engine);
            } catch (CertificateException e) {
                throw refused(chain, e);
            }
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            trusted.checkServerTrusted(chain, authType);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
            trusted.checkServerTrusted(chain, authType, socket);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
            trusted.checkServerTrusted(chain, authType, engine);
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
            default -> key.getAlgorithm();                  // EdDSA, Ed25519, Ed448: the key names its own scheme
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

    /**
     * Each certificate of a chain is followed by the one that issued it, as TLS sends them: a
     * file in another order, or with another CA's certificate, is named now rather than left for
     * every client to refuse.
     */
    private static void checkIssuers(Path file, List<X509Certificate> chain) throws PemException {
        for (int i = 1; i < chain.size(); i++) {
            X509Certificate issued = chain.get(i - 1);
            X509Certificate issuer = chain.get(i);
            boolean follows = issued.getIssuerX500Principal().equals(issuer.getSubjectX500Principal());
            try {
                if (follows) issued.verify(issuer.getPublicKey());
            } catch (GeneralSecurityException e) {
                follows = false;
            }
            if (!follows) {
                throw new PemException(file, "certificate " + (i + 1) + " (" + issuer.getSubjectX500Principal() + ") did not issue certificate " + i
                                             + " (" + issued.getSubjectX500Principal() + ", issued by " + issued.getIssuerX500Principal()
                                             + "): expected the certificate first, then each issuer after the certificate it issued");
            }
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

    /**
     * The private key of a PEM file, in any form openssl, certtool or certbot write and QEMU,
     * nbdkit and nginx read: PKCS#1 ({@code BEGIN RSA PRIVATE KEY}), SEC1 ({@code BEGIN EC
     * PRIVATE KEY}), PKCS#8 ({@code BEGIN PRIVATE KEY}; RSA, EC or EdDSA), or PKCS#8 encrypted
     * with a passphrase ({@code BEGIN ENCRYPTED PRIVATE KEY}; also the legacy {@code Proc-Type:
     * 4,ENCRYPTED} PKCS#1/SEC1 form) — the passphrase being the first line of
     * {@code passphraseFile}. Text around the PEM block (certtool's "Public Key Info:") and an
     * EC PARAMETERS block before it are skipped. Bouncy Castle's PEM reader does the parsing.
     *
     * @param passphraseFile the file whose first line is the key's passphrase; null when the key is not encrypted
     */
    public static PrivateKey privateKey(Path file, Path passphraseFile) throws PemException {
        Object pem;
        try (PEMParser parser = new PEMParser(Files.newBufferedReader(file, StandardCharsets.US_ASCII))) {
            do {
                pem = parser.readObject();
            } while (pem instanceof ASN1ObjectIdentifier);  // "-----BEGIN EC PARAMETERS-----" before the key (openssl ecparam -genkey)
        } catch (IOException | RuntimeException e) {
            throw new PemException(file, "not a PEM private key: " + e.getMessage());
        }
        JcaPEMKeyConverter converter = new JcaPEMKeyConverter();
        try {
            PrivateKeyInfo info = switch (pem) {
                case PEMKeyPair pair -> pair.getPrivateKeyInfo();
                case PrivateKeyInfo plain -> plain;
                case PKCS8EncryptedPrivateKeyInfo encrypted -> encrypted.decryptPrivateKeyInfo(
                        new JceOpenSSLPKCS8DecryptorProviderBuilder().setProvider(BOUNCY_CASTLE).build(passphrase(file, passphraseFile)));
                case PEMEncryptedKeyPair legacy -> legacy.decryptKeyPair(
                        new JcePEMDecryptorProviderBuilder().setProvider(BOUNCY_CASTLE).build(passphrase(file, passphraseFile))).getPrivateKeyInfo();
                case null, default -> throw new PemException(file, "no private key (expected -----BEGIN PRIVATE KEY-----, "
                        + "-----BEGIN RSA PRIVATE KEY-----, -----BEGIN EC PRIVATE KEY----- or -----BEGIN ENCRYPTED PRIVATE KEY-----)");
            };
            PrivateKey key = converter.getPrivateKey(info);
            if (!KEY_ALGORITHMS.contains(key.getAlgorithm())) {
                throw new PemException(file, "a " + key.getAlgorithm() + " key (expected an RSA, EC or EdDSA private key)");
            }
            return key;
        } catch (PKCSException | EncryptionException e) {
            throw new PemException(file, "cannot decrypt the key with the passphrase in " + passphraseFile + " (wrong passphrase?)");
        } catch (OperatorCreationException | IOException e) {
            throw new PemException(file, "cannot read the key: " + e.getMessage());
        }
    }

    /** The first line of {@code passphraseFile}, for the encrypted key in {@code keyFile}. */
    private static char[] passphrase(Path keyFile, Path passphraseFile) throws PemException {
        if (passphraseFile == null) {
            throw new PemException(keyFile, "the key is encrypted and no passphrase file is given");
        }
        try (BufferedReader in = Files.newBufferedReader(passphraseFile, StandardCharsets.UTF_8)) {
            String line = in.readLine();
            if (line == null || line.isEmpty()) throw new PemException(passphraseFile, "no passphrase (expected it on the first line)");
            return line.toCharArray();
        } catch (IOException e) {
            throw new PemException(passphraseFile, "cannot read: " + e);
        }
    }
}
