package io.iotarget.transport;

import org.bouncycastle.tls.crypto.TlsCrypto;
import org.bouncycastle.tls.crypto.impl.jcajce.JcaTlsCryptoProvider;

import javax.net.ssl.SSLEngine;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.Principal;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * TLS pre-shared keys from a file in GnuTLS psktool's format, which nbdkit ({@code --tls-psk}),
 * qemu ({@code tls-creds-psk}'s {@code keys.psk}) and libnbd ({@code tls-psk-file}) read: one
 * {@code USERNAME:HEXKEY} per line. A client proves it holds a username's key in a TLS 1.3
 * handshake ({@link PskEngine}); the username is then its identity ({@link Identity}).
 * Immutable once read; any thread.
 */
public final class TlsPsk {
    private static final Pattern LINE = Pattern.compile("([^:\\s]+):((?:[0-9a-fA-F]{2})+)");
    private static final TlsCrypto CRYPTO = new JcaTlsCryptoProvider().create(new SecureRandom());

    private final Path file;
    private final Map<String, byte[]> keys;

    private TlsPsk(Path file, Map<String, byte[]> keys) {
        this.file = file;
        this.keys = keys;
    }

    /** A client's proved pre-shared key: the username its key is filed under. */
    public record Identity(String name) implements Principal {
        @Override
        public String getName() {
            return name;
        }
    }

    /** Reads {@code file}; the error names the line that is not {@code USERNAME:HEXKEY}. Blank lines and {@code #} comments are skipped. */
    public static TlsPsk read(Path file) throws Pem.PemException {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new Pem.PemException(file, "cannot read: " + e);
        }
        Map<String, byte[]> keys = new HashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) continue;
            var m = LINE.matcher(line);
            if (!m.matches()) {
                throw new Pem.PemException(file, "line " + (i + 1) + ": expected USERNAME:HEXKEY, as psktool -u USERNAME -p FILE writes it");
            }
            if (keys.putIfAbsent(m.group(1), HexFormat.of().parseHex(m.group(2))) != null) {
                throw new Pem.PemException(file, "line " + (i + 1) + ": " + m.group(1) + " has a key already");
            }
        }
        if (keys.isEmpty()) throw new Pem.PemException(file, "no key (expected USERNAME:HEXKEY lines, as psktool writes them)");
        return new TlsPsk(file, Map.copyOf(keys));
    }

    public Path file() {
        return file;
    }

    /** The key filed under {@code username}, or null. */
    byte[] key(String username) {
        return keys.get(username);
    }

    /**
     * A server engine for one connection: the PSK engine, or — when {@code certificates} gives
     * engines too — one that takes whichever the client's first ClientHello asks for: a
     * pre_shared_key offer goes to the PSK engine, anything else to a certificate engine
     * ({@link ChoosingEngine}).
     */
    public SSLEngine newEngine(Supplier<SSLEngine> certificates) {
        PskEngine psk = new PskEngine(CRYPTO, this);
        return certificates == null ? psk : new ChoosingEngine(psk, certificates.get());
    }
}
