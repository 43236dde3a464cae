package io.iotarget.testkit;

import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedKeyManager;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;

/**
 * A throwaway X.509 certificate authority for TLS tests, made when the test runs (no key is ever
 * committed) — with openssl ({@link #create}: EC P-256 keys in PKCS#8), or with GnuTLS's
 * certtool as QEMU's and libnbd's documentation teach ({@link #certtool}: an RSA CA, and each
 * certificate's key of the {@link Key} kind asked for, in certtool's own encodings), and
 * intermediate CAs under either ({@link #intermediate}), whose certificates come as chains.
 * Credentials come in the directory layout of QEMU's {@code tls-creds-x509}, which libnbd and
 * nbdkit read too: {@code ca-cert.pem} plus {@code server-cert.pem}/{@code server-key.pem} for a
 * server, {@code client-cert.pem}/{@code client-key.pem} for a client. Certificates are valid for
 * two days.
 */
public final class TestPki {
    public static final String CA_CERT = "ca-cert.pem";
    public static final String CA_CRL = "ca-crl.pem";
    public static final String SERVER_CERT = "server-cert.pem";
    public static final String SERVER_KEY = "server-key.pem";
    public static final String CLIENT_CERT = "client-cert.pem";
    public static final String CLIENT_KEY = "client-key.pem";

    /** The passphrase of {@link Key#EC_PKCS8_ENCRYPTED} keys. */
    public static final String PASSPHRASE = "correct horse battery";

    /** A private key as certtool writes it (the algorithm, and the PEM form). */
    public enum Key {
        /** RSA 3072, PKCS#1: {@code -----BEGIN RSA PRIVATE KEY-----} (certtool's default). */
        RSA_PKCS1("rsa"),
        /** RSA 3072, PKCS#8: {@code -----BEGIN PRIVATE KEY-----}. */
        RSA_PKCS8("rsa", "--pkcs8", "--pkcs-cipher=none"),
        /** EC P-256, SEC1: {@code -----BEGIN EC PRIVATE KEY-----}. */
        EC_SEC1("ecdsa"),
        /** EC P-256, PKCS#8: {@code -----BEGIN PRIVATE KEY-----}. */
        EC_PKCS8("ecdsa", "--pkcs8", "--pkcs-cipher=none"),
        /** EC P-256, PKCS#8 encrypted with {@link #PASSPHRASE} (PBES2): {@code -----BEGIN ENCRYPTED PRIVATE KEY-----}. */
        EC_PKCS8_ENCRYPTED("ecdsa", "--pkcs8", "--password=" + PASSPHRASE);

        private final List<String> options;

        Key(String type, String... options) {
            this.options = new ArrayList<>(List.of("--key-type=" + type));
            this.options.addAll(List.of(options));
        }
    }

    private final Path dir;
    private final Path caKey;
    private final Path caCert;
    /** certtool's PKI: its certificates are made by certtool with keys of the kind asked; null for openssl's. */
    private final Key certtoolKey;
    /** The root CA's certificate: the ca-cert.pem of every credentials directory ({@link #caCert} for a root). */
    private final Path root;
    /** The CA certificates that follow an issued certificate in its file, nearest first: none for a root. */
    private final List<Path> issuers;

    private TestPki(Path dir, Key certtoolKey, Path root, List<Path> issuers) {
        this.dir = dir;
        this.caKey = dir.resolve("ca-key.pem");
        this.caCert = dir.resolve(CA_CERT);
        this.certtoolKey = certtoolKey;
        this.root = root == null ? caCert : root;
        this.issuers = issuers;
    }

    /** A new CA named {@code name} in {@code dir} (created); skips the test when openssl is missing. */
    public static TestPki create(Path dir, String name) throws IOException, InterruptedException {
        Tools.require("openssl", "/usr/bin/openssl");
        Files.createDirectories(dir);
        TestPki pki = new TestPki(dir, null, null, List.of());
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", pki.caKey.toString(), "-out", pki.caCert.toString(), "-days", "2", "-subj", "/CN=" + name,
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign");
        pki.revocationFiles();
        return pki;
    }

    /**
     * A new CA named {@code name} in {@code dir}, made by certtool with an RSA key (PKCS#1) and
     * a PrintableString subject, as a new user following GnuTLS's manual gets; its certificates
     * get keys of kind {@code key} unless asked otherwise. Skips the test when certtool is missing.
     */
    public static TestPki certtool(Path dir, String name, Key key) throws IOException, InterruptedException {
        Tools.require("certtool (gnutls-bin)", "/usr/bin/certtool");
        Files.createDirectories(dir);
        TestPki pki = new TestPki(dir, key, null, List.of());
        certtool("--generate-privkey", "--key-type=rsa", "--outfile", pki.caKey.toString());
        Path template = Files.writeString(dir.resolve("ca.info"), "cn = \"" + name + "\"\nca\ncert_signing_key\ncrl_signing_key\nexpiration_days = 2\n");
        certtool("--generate-self-signed", "--load-privkey", pki.caKey.toString(), "--template", template.toString(),
                 "--outfile", pki.caCert.toString());
        pki.revocationFiles();
        return pki;
    }

    /**
     * A new intermediate CA named {@code name} in {@code dir}, issued by this one (openssl, an EC
     * P-256 key, {@code pathlen:0}): a three-level PKI, root → intermediate → leaf. The
     * certificates it issues are written as certificate files hold chains — the certificate, then
     * its issuers up to (not including) the root — and its credentials directories trust the root
     * alone: their ca-cert.pem is the root's.
     */
    public TestPki intermediate(Path dir, String name) throws IOException, InterruptedException {
        Files.createDirectories(dir);
        List<Path> chain = new ArrayList<>(List.of(dir.resolve(CA_CERT)));
        chain.addAll(issuers);
        TestPki pki = new TestPki(dir, null, root, List.copyOf(chain));
        Path request = Files.createTempFile(dir, "req", ".csr");
        Path ext = Files.writeString(dir.resolve("ca.ext"), "basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n");
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", pki.caKey.toString(), "-out", request.toString(), "-subj", "/CN=" + name);
        openssl("x509", "-req", "-in", request.toString(), "-CA", caCert.toString(), "-CAkey", caKey.toString(),
                "-CAcreateserial", "-days", "2", "-extfile", ext.toString(), "-out", pki.caCert.toString());
        pki.revocationFiles();
        return pki;
    }

    /** This CA's own certificate (alone, for an intermediate). */
    public Path caCert() {
        return caCert;
    }

    /** The files openssl ca wants for {@link #revoke}. */
    private void revocationFiles() throws IOException {
        Files.writeString(dir.resolve("index.txt"), "");
        Files.writeString(dir.resolve("crlnumber"), "01\n");
        Files.writeString(dir.resolve("ca.cnf"), "[ca]\ndefault_ca=test\n[test]\ndatabase=" + dir.resolve("index.txt")
                                                 + "\ncrlnumber=" + dir.resolve("crlnumber") + "\ndefault_md=sha256\ndefault_crl_days=2\n");
    }

    /** A server's directory {@code name}: the CA, and a certificate for 127.0.0.1 and localhost. */
    public Path server(String name) throws IOException, InterruptedException {
        return server(name, certtoolKey);
    }

    /** {@link #server(String)} with a certtool key of kind {@code key} (a certtool PKI only). */
    public Path server(String name, Key key) throws IOException, InterruptedException {
        Path d = credentials(name);
        if (certtoolKey != null) {
            certtoolIssue(d.resolve(SERVER_CERT), d.resolve(SERVER_KEY), key, "cn = localhost\nip_address = 127.0.0.1\ndns_name = localhost\n"
                                                                               + "tls_www_server\nsigning_key\nencryption_key\n");
        } else {
            issue(d.resolve(SERVER_CERT), d.resolve(SERVER_KEY), "/CN=localhost",
                    "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n");
        }
        return d;
    }

    /**
     * {@link #server(String)} whose certificate may also authenticate as a client (extended key
     * usage serverAuth and clientAuth), as etcd wants with {@code --client-cert-auth}: its gateway
     * calls its own gRPC server with the server certificate. An openssl PKI only.
     */
    public Path serverAndClient(String name) throws IOException, InterruptedException {
        if (certtoolKey != null) throw new UnsupportedOperationException("an openssl PKI only");
        Path d = credentials(name);
        issue(d.resolve(SERVER_CERT), d.resolve(SERVER_KEY), "/CN=localhost",
                "extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n");
        return d;
    }

    /** A client's directory {@code name}: the CA, and a client certificate with subject {@code subject} ("/O=a/CN=b"). */
    public Path client(String name, String subject) throws IOException, InterruptedException {
        return client(name, subject, certtoolKey);
    }

    /** {@link #client(String, String)} with a certtool key of kind {@code key} (a certtool PKI only). */
    public Path client(String name, String subject, Key key) throws IOException, InterruptedException {
        Path d = credentials(name);
        if (certtoolKey != null) {
            StringBuilder template = new StringBuilder();
            for (String part : subject.substring(1).split("/")) {        // "/O=tenants/CN=a" -> certtool's template fields
                String[] kv = part.split("=", 2);
                String field = switch (kv[0]) {
                    case "CN" -> "cn";
                    case "O" -> "organization";
                    case "OU" -> "unit";
                    case "C" -> "country";
                    default -> throw new IllegalArgumentException("subject part " + part + " (expected CN, O, OU or C)");
                };
                template.append(field).append(" = \"").append(kv[1]).append("\"\n");
            }
            certtoolIssue(d.resolve(CLIENT_CERT), d.resolve(CLIENT_KEY), key, template + "tls_www_client\nsigning_key\nencryption_key\n");
        } else {
            issue(d.resolve(CLIENT_CERT), d.resolve(CLIENT_KEY), subject, "extendedKeyUsage=clientAuth\n");
        }
        return d;
    }

    /** A client's directory {@code name} with only the CA: it checks the server and shows no certificate. */
    public Path anonymousClient(String name) throws IOException, InterruptedException {
        return credentials(name);
    }

    /** Revokes {@code certFile} and writes the CA's revocation list into {@code into}/ca-crl.pem. */
    public void revoke(Path certFile, Path into) throws IOException, InterruptedException {
        String cnf = dir.resolve("ca.cnf").toString();
        openssl("ca", "-config", cnf, "-keyfile", caKey.toString(), "-cert", caCert.toString(), "-revoke", certFile.toString());
        openssl("ca", "-config", cnf, "-keyfile", caKey.toString(), "-cert", caCert.toString(), "-gencrl",
                "-out", into.resolve(CA_CRL).toString());
    }

    /** The SHA-256 fingerprint of a certificate as openssl prints it: 32 colon-separated upper-case hex pairs. */
    public static String fingerprint(Path certFile) throws IOException, InterruptedException {
        String out = openssl("x509", "-in", certFile.toString(), "-noout", "-fingerprint", "-sha256").strip();
        return out.substring(out.indexOf('=') + 1);
    }

    /** The subject of a certificate in RFC 2253 form ("CN=b,O=a"), as qemu's tls-authz lists match it. */
    public static String subject(Path certFile) throws IOException, InterruptedException {
        String out = openssl("x509", "-in", certFile.toString(), "-noout", "-subject", "-nameopt", "RFC2253").strip();
        return out.substring(out.indexOf('=') + 1);
    }

    /**
     * A JDK TLS 1.3 client of a client directory: it trusts the directory's ca-cert.pem and shows
     * its client certificate, if it has one, to any server — the JDK's own key manager withholds a
     * certificate the server's CA did not issue, which would hide what the server does with it.
     */
    public static SSLContext clientContext(Path credentials) throws IOException, InterruptedException, GeneralSecurityException {
        KeyStore trusted = KeyStore.getInstance("PKCS12");
        trusted.load(null, null);
        try (InputStream in = Files.newInputStream(credentials.resolve(CA_CERT))) {
            trusted.setCertificateEntry("ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory trust = TrustManagerFactory.getInstance("PKIX");
        trust.init(trusted);
        KeyManager[] keys = null;
        if (Files.exists(credentials.resolve(CLIENT_CERT))) {
            Path p12 = credentials.resolve("client.p12");
            openssl("pkcs12", "-export", "-in", credentials.resolve(CLIENT_CERT).toString(), "-inkey", credentials.resolve(CLIENT_KEY).toString(),
                    "-passout", "pass:test", "-out", p12.toString());
            KeyStore mine = KeyStore.getInstance("PKCS12");
            try (InputStream in = Files.newInputStream(p12)) {
                mine.load(in, "test".toCharArray());
            }
            KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            factory.init(mine, "test".toCharArray());
            keys = new KeyManager[]{new ShowAlways((X509ExtendedKeyManager) factory.getKeyManagers()[0])};
        }
        SSLContext context = SSLContext.getInstance("TLSv1.3");
        context.init(keys, trust.getTrustManagers(), null);
        return context;
    }

    /** A client key manager that offers its one certificate whatever issuers the server names. */
    private static final class ShowAlways extends X509ExtendedKeyManager {
        private final X509ExtendedKeyManager keys;
        private final String alias;

        ShowAlways(X509ExtendedKeyManager keys) {
            this.keys = keys;
            this.alias = keys.getClientAliases("EC", null)[0];
        }

        @Override
        public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
            return alias;
        }

        @Override
        public String chooseEngineClientAlias(String[] keyType, Principal[] issuers, SSLEngine engine) {
            return alias;
        }

        @Override
        public String[] getClientAliases(String keyType, Principal[] issuers) {
            return new String[]{alias};
        }

        @Override
        public String[] getServerAliases(String keyType, Principal[] issuers) {
            return null;
        }

        @Override
        public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
            return null;
        }

        @Override
        public X509Certificate[] getCertificateChain(String name) {
            return keys.getCertificateChain(name);
        }

        @Override
        public PrivateKey getPrivateKey(String name) {
            return keys.getPrivateKey(name);
        }
    }

    private Path credentials(String name) throws IOException {
        Path d = dir.resolve(name);
        Files.createDirectories(d);
        Files.copy(root, d.resolve(CA_CERT));
        return d;
    }

    private void issue(Path cert, Path key, String subject, String extensions) throws IOException, InterruptedException {
        Path request = Files.createTempFile(dir, "req", ".csr");
        Path ext = Files.createTempFile(dir, "ext", ".cnf");
        Files.writeString(ext, "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n" + extensions);
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", key.toString(), "-out", request.toString(), "-subj", subject);
        openssl("x509", "-req", "-in", request.toString(), "-CA", caCert.toString(), "-CAkey", caKey.toString(),
                "-CAcreateserial", "-days", "2", "-extfile", ext.toString(), "-out", cert.toString());
        for (Path issuer : issuers) Files.writeString(cert, Files.readString(issuer), java.nio.file.StandardOpenOption.APPEND);
    }

    /** A key of kind {@code kind} and a certificate for it from this certtool CA, with {@code template}'s fields. */
    private void certtoolIssue(Path cert, Path key, Key kind, String template) throws IOException, InterruptedException {
        List<String> generate = new ArrayList<>(List.of("--generate-privkey", "--outfile", key.toString()));
        generate.addAll(kind.options);
        certtool(generate.toArray(String[]::new));
        Path info = Files.createTempFile(dir, "cert", ".info");
        Files.writeString(info, template + "expiration_days = 2\n");
        List<String> issue = new ArrayList<>(List.of("--generate-certificate", "--load-privkey", key.toString(),
                "--load-ca-certificate", caCert.toString(), "--load-ca-privkey", caKey.toString(), "--template", info.toString(),
                "--outfile", cert.toString()));
        if (kind == Key.EC_PKCS8_ENCRYPTED) issue.add("--password=" + PASSPHRASE);
        certtool(issue.toArray(String[]::new));
    }

    private static void certtool(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("certtool"));
        command.addAll(List.of(args));
        Tools.Result r = Tools.run(60, command);
        if (r.exit() != 0) throw new IOException(String.join(" ", command) + " exited " + r.exit() + ":\n" + r.out());
    }

    private static String openssl(String... args) throws IOException, InterruptedException {
        String[] command = new String[args.length + 1];
        command[0] = "openssl";
        System.arraycopy(args, 0, command, 1, args.length);
        Tools.Result r = Tools.run(60, List.of(command));
        if (r.exit() != 0) throw new IOException(String.join(" ", command) + " exited " + r.exit() + ":\n" + r.out());
        return r.out();
    }
}
