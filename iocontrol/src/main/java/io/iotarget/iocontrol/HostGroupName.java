package io.iotarget.iocontrol;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The name of the child group a host's IO is charged to under {@code cgroup_per_host}: the
 * kind of the host's identity ({@link HostIdentity.Kind#label}: {@code nqn}, {@code cert},
 * {@code sha256}, {@code psk}, {@code addr}), a {@code :}, and the identity's bytes made valid
 * in a group name. Letters, digits and {@code - _ . @ : = ,} stay as they are, so an NQN, a
 * certificate's RFC 2253 subject, an IPv4 or IPv6 address and a fingerprint read unchanged
 * ({@code nqn:nqn.2014-08.org.nvmexpress:uuid:...}, {@code cert:CN=alice,O=t1},
 * {@code addr:192.0.2.7}); every other byte, {@code +} itself included, becomes {@code +HH}
 * (upper-case hex): PSK user {@code client one} is {@code psk:client+20one}.
 *
 * <p>Never empty, never {@code .} or {@code ..}, and injective: no label contains {@code :},
 * so the text before the first {@code :} gives the kind, and the escaping of the rest is
 * undone byte by byte ({@link #decode}). A name that would be longer than a group name may be
 * (255 bytes) is instead the kind's label, {@code -sha256:}, and the SHA-256 of the identity's
 * bytes in lower-case hex ({@code cert-sha256:3f5a...}): a different label, so it can meet no
 * short name, and distinct while SHA-256 has no known collision. Stateless; any thread.
 */
public final class HostGroupName {
    /** Longest group name (cgroupfs' NAME_MAX). */
    static final int MAX_NAME_BYTES = 255;
    /** What a hashed name's label adds to its kind's. */
    static final String HASHED_SUFFIX = "-sha256";
    private static final char ESCAPE = '+';
    private static final HexFormat LOWER_HEX = HexFormat.of();

    private HostGroupName() {
    }

    /** The group name for {@code identity}: not empty, at most 255 bytes of letters, digits and {@code -_.@:=,+}. */
    public static String of(HostIdentity identity) {
        byte[] body = identity.bodyBytes();
        String label = identity.kind().label();
        StringBuilder sb = new StringBuilder(label.length() + 1 + body.length).append(label).append(':');
        escape(body, sb, false);
        if (sb.length() <= MAX_NAME_BYTES) return sb.toString();
        return label + HASHED_SUFFIX + ":" + LOWER_HEX.formatHex(sha256(body));
    }

    /**
     * The identity a name {@link #of} gave, or null when {@code name} is no such name (no known
     * kind, a byte that {@link #of} would have escaped, a malformed escape, a hashed name).
     * {@code decode(of(id))} equals {@code id} for every identity whose name is not hashed.
     */
    public static HostIdentity decode(String name) {
        int colon = name.indexOf(':');
        if (colon < 0) return null;
        HostIdentity.Kind kind = HostIdentity.Kind.ofLabel(name.substring(0, colon));
        if (kind == null) return null;
        ByteArrayOutputStream body = new ByteArrayOutputStream(name.length());
        for (int i = colon + 1; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c == ESCAPE) {
                if (i + 2 >= name.length()) return null;
                int high = upperHexDigit(name.charAt(i + 1));
                int low = upperHexDigit(name.charAt(i + 2));
                if (high < 0 || low < 0 || kept(high << 4 | low)) return null;   // {@link #of} escapes only what it does not keep
                body.write(high << 4 | low);
                i += 2;
            } else if (c < 0x80 && kept(c)) {
                body.write(c);
            } else {
                return null;
            }
        }
        return HostIdentity.of(kind, body.toByteArray());
    }

    /**
     * What versions before kind prefixes named the group of a host whose identity was
     * {@code text} (its NQN, certificate CN or fingerprint, PSK username or address): kept only
     * to find groups the operator configured under those names ({@link GroupTree#bindHostChild}
     * warns of them). Not injective across kinds, which is why it was replaced.
     */
    public static String legacy(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        StringBuilder sb = new StringBuilder(bytes.length);
        escape(bytes, sb, true);
        return sb.toString();
    }

    /**
     * Appends {@code bytes} to {@code sb}, each byte a name does not keep as {@code +HH}; with
     * {@code legacy}, as versions before kind prefixes kept them (no {@code = ,}, and a leading
     * {@code .} escaped, since the name then began with the identity).
     */
    private static void escape(byte[] bytes, StringBuilder sb, boolean legacy) {
        for (int i = 0; i < bytes.length; i++) {
            int b = bytes[i] & 0xFF;
            boolean keep = legacy ? kept(b) && b != '=' && b != ',' && (b != '.' || i > 0) : kept(b);
            if (keep) sb.append((char) b);
            else sb.append(ESCAPE).append(Character.toUpperCase(Character.forDigit(b >> 4, 16)))
                   .append(Character.toUpperCase(Character.forDigit(b & 0xF, 16)));
        }
    }

    /** Bytes a name keeps as they are: ASCII letters, digits and {@code - _ . @ : = ,}. */
    private static boolean kept(int b) {
        return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
               || b == '-' || b == '_' || b == '.' || b == '@' || b == ':' || b == '=' || b == ',';
    }

    private static int upperHexDigit(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
