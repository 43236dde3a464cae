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
public final class TlsPsk implements PskKeys {
    private static final Pattern LINE = Pattern.compile("([^:\\s]+):((?:[0-9a-fA-F]{2})+)");
    /**
     * The shortest key taken: 128 bits, the strength of the weakest TLS 1.3 suite (and NIST's
     * floor for a symmetric key); psktool makes 32 bytes unless told otherwise. A shorter key is
     * refused at load rather than served, since a client could guess it offline from one
     * handshake's binder.
     */
    public static final int MIN_KEY_BYTES = 16;
    static final TlsCrypto CRYPTO = new JcaTlsCryptoProvider().create(new SecureRandom());

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

    /**
     * Reads {@code file}; the error names the line that is not {@code USERNAME:HEXKEY}, repeats a
     * username, or holds a key shorter than {@link #MIN_KEY_BYTES}. Blank lines and {@code #}
     * comments are skipped.
     */
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
            byte[] key = HexFormat.of().parseHex(m.group(2));
            if (key.length < MIN_KEY_BYTES) {
                throw new Pem.PemException(file, "line " + (i + 1) + ": the key of " + m.group(1) + " is " + key.length + " byte(s), "
                                                 + 8 * key.length + " bits (expected: at least " + MIN_KEY_BYTES + " bytes, " + 8 * MIN_KEY_BYTES
                                                 + " bits; psktool makes 32)");
            }
            if (keys.putIfAbsent(m.group(1), key) != null) {
                throw new Pem.PemException(file, "line " + (i + 1) + ": " + m.group(1) + " has a key already");
            }
        }
        if (keys.isEmpty()) throw new Pem.PemException(file, "no key (expected USERNAME:HEXKEY lines, as psktool writes them)");
        return new TlsPsk(file, Map.copyOf(keys));
    }

    public Path file() {
        return file;
    }

    /** The key filed under {@code username}, or null; psktool keys have a SHA-256 binder (GnuTLS's only one). */
    @Override
    public Psk find(String username) {
        byte[] key = keys.get(username);
        return key == null ? null : new Psk(key, false);
    }

    /**
     * A server engine for one connection: the PSK engine, or — when {@code certificates} gives
     * engines too — one that takes whichever the client's first ClientHello asks for: a
     * pre_shared_key offer goes to the PSK engine, anything else to a certificate engine
     * ({@link ChoosingEngine}).
     */
    public SSLEngine newEngine(Supplier<SSLEngine> certificates) {
        SSLEngine psk = newEngine();
        return certificates == null ? psk : new ChoosingEngine(psk, certificates.get());
    }
}
