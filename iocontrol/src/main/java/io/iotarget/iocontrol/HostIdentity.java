package io.iotarget.iocontrol;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Who a host is, as a front end established it, for {@code cgroup_per_host}: the kind of
 * identity (an NVMe host NQN, an NBD client's certificate subject or fingerprint, its TLS-PSK
 * username, its plaintext address) and the identity's bytes. The kind is part of the identity:
 * a PSK user {@code alice} and a host NQN {@code alice} are different hosts, and get different
 * groups ({@link HostGroupName}). Immutable; any thread.
 */
public final class HostIdentity {
    /** The kinds of identity, each with the label its group names start with (no label contains ':'). */
    public enum Kind {
        /** An NVMe host NQN, as the admin Connect carried it (valid UTF-8, not empty: Connect refuses others). */
        NQN("nqn"),
        /** An NBD client's verified certificate: its subject DN in RFC 2253 form. */
        CERT("cert"),
        /** An NBD client's verified certificate whose subject is empty: its SHA-256 fingerprint (AB:CD:...). */
        CERT_SHA256("sha256"),
        /** An NBD client that proved a TLS pre-shared key: the key's username. */
        PSK("psk"),
        /** An NBD client without a TLS identity: the IP address it connects from. */
        ADDR("addr");

        private final String label;

        Kind(String label) {
            this.label = label;
        }

        /** What group names of this kind start with, before the ':'. */
        public String label() {
            return label;
        }

        /** The kind with {@code label}, or null. */
        static Kind ofLabel(String label) {
            for (Kind k : values()) if (k.label.equals(label)) return k;
            return null;
        }
    }

    private final Kind kind;
    private final byte[] body;
    private final String legacy;

    private HostIdentity(Kind kind, byte[] body, String legacy) {
        this.kind = kind;
        this.body = body.clone();
        this.legacy = legacy;
    }

    /** An identity of {@code kind} with these bytes (may be empty; the group name is not). */
    public static HostIdentity of(Kind kind, byte[] body) {
        return new HostIdentity(kind, body, null);
    }

    /** An NVMe host NQN. */
    public static HostIdentity nqn(String hostNqn) {
        return new HostIdentity(Kind.NQN, utf8(hostNqn), hostNqn);
    }

    /**
     * A certificate's subject DN in RFC 2253 form ({@code CN=alice,O=t1}); {@code legacyName}
     * is what versions before kind prefixes named the group after (its CN, else its
     * fingerprint), for {@link HostGroupName#legacy}.
     */
    public static HostIdentity certificate(String subjectRfc2253, String legacyName) {
        return new HostIdentity(Kind.CERT, utf8(subjectRfc2253), legacyName);
    }

    /** A certificate with an empty subject, by its SHA-256 fingerprint. */
    public static HostIdentity certificateFingerprint(String fingerprint) {
        return new HostIdentity(Kind.CERT_SHA256, utf8(fingerprint), fingerprint);
    }

    /** A TLS-PSK username. */
    public static HostIdentity psk(String username) {
        return new HostIdentity(Kind.PSK, utf8(username), username);
    }

    /** A plaintext client's IP address, as {@code InetAddress.getHostAddress} spells it. */
    public static HostIdentity address(String hostAddress) {
        return new HostIdentity(Kind.ADDR, utf8(hostAddress), hostAddress);
    }

    public Kind kind() {
        return kind;
    }

    /** The identity's bytes (a copy). */
    public byte[] body() {
        return body.clone();
    }

    /** Package-private view without the copy, for {@link HostGroupName}. */
    byte[] bodyBytes() {
        return body;
    }

    /** What earlier versions named this host's group after (before kind prefixes), or null: for the migration warning only. */
    String legacyText() {
        return legacy;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Equal kind and bytes; the legacy text is not part of the identity. */
    @Override
    public boolean equals(Object o) {
        return o instanceof HostIdentity other && kind == other.kind && Arrays.equals(body, other.body);
    }

    @Override
    public int hashCode() {
        return 31 * kind.hashCode() + Arrays.hashCode(body);
    }

    /** The group name ({@link HostGroupName#of}): escaped, so it is safe to log as it is. */
    @Override
    public String toString() {
        return HostGroupName.of(this);
    }
}
