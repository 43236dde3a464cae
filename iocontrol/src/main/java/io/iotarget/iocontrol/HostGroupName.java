package io.iotarget.iocontrol;

import java.nio.charset.StandardCharsets;

/**
 * The name of the child group a host's IO is charged to under {@code cgroup_per_host}: the
 * host's identity (an NVMe host NQN, an NBD client's certificate CN or fingerprint or IP
 * address) made a valid group name. Letters, digits and {@code - _ . @ :} stay as they are, so
 * an NQN ({@code nqn.2014-08.org.nvmexpress:uuid:...}), an IPv4 or IPv6 address and a
 * fingerprint ({@code AB:CD:...}) read unchanged; every other byte of the UTF-8 text, {@code +}
 * itself included, becomes {@code +HH} (upper-case hex), and so does a leading {@code .} (no
 * host is named {@code .}, {@code ..} or a hidden name): {@code CN=client one} gives
 * {@code client+20one}, {@code fe80::1%eth0} gives {@code fe80::1+25eth0}. Distinct identities
 * give distinct names. Stateless; any thread.
 */
public final class HostGroupName {
    private static final char ESCAPE = '+';

    private HostGroupName() {
    }

    /** The group name for {@code identity} (not empty). */
    public static String of(String identity) {
        StringBuilder sb = new StringBuilder(identity.length());
        byte[] bytes = identity.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < bytes.length; i++) {
            int b = bytes[i] & 0xFF;
            boolean kept = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
                           || b == '-' || b == '_' || b == '@' || b == ':' || (b == '.' && i > 0);
            if (kept) sb.append((char) b);
            else sb.append(ESCAPE).append(Character.toUpperCase(Character.forDigit(b >> 4, 16)))
                   .append(Character.toUpperCase(Character.forDigit(b & 0xF, 16)));
        }
        return sb.toString();
    }
}
