package io.iotarget.frontend.nbd;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;

import javax.security.auth.x500.X500Principal;
import java.util.HexFormat;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * One entry of an export's {@code allowed_clients}: a client certificate, named by its SHA-256
 * fingerprint (one exact certificate) or by its subject's distinguished name (any certificate
 * the CA issues with that subject, as QEMU's {@code tls-authz} lists match), written as
 * {@code openssl x509 -noout -fingerprint -sha256} and {@code -subject -nameopt RFC2253} print
 * them; or a pre-shared key, {@code psk:USERNAME} (its username in {@code tls/psk_file}). Read
 * back in that form. Immutable; any thread.
 */
sealed interface AllowedClient {
    /** 32 bytes in hex, pairs optionally separated by colons, either case. */
    Pattern FINGERPRINT = Pattern.compile("(?i)[0-9a-f]{2}(:?[0-9a-f]{2}){31}");
    String EXPECTED = "a SHA-256 certificate fingerprint (AB:CD:... as openssl x509 -noout -fingerprint -sha256 prints it), "
                      + "a subject DN (CN=client,O=tenant as openssl x509 -noout -subject -nameopt RFC2253 prints it) "
                      + "or psk:USERNAME (a username of tls/psk_file)";
    String PSK_PREFIX = "psk:";

    /** Whether the client's verified certificate is this one. */
    boolean matches(ClientIdentity client);

    /** The entry as it reads back. */
    String text();

    /** A certificate by fingerprint: exactly that certificate. */
    record Fingerprint(String text) implements AllowedClient {
        @Override
        public boolean matches(ClientIdentity client) {
            return text.equals(client.fingerprint());
        }
    }

    /** Certificates by subject: any the CA issued to that name. */
    record Subject(X500Principal name) implements AllowedClient {
        @Override
        public boolean matches(ClientIdentity client) {
            return client.certificate() != null && name.equals(client.certificate().getSubjectX500Principal());
        }

        @Override
        public String text() {
            return name.getName();
        }
    }

    /** A pre-shared key by its username: a client that proved it holds that key. */
    record Psk(String username) implements AllowedClient {
        @Override
        public boolean matches(ClientIdentity client) {
            return username.equals(client.pskUsername());
        }

        @Override
        public String text() {
            return PSK_PREFIX + username;
        }
    }

    /** Parses one entry; EINVAL for anything else, naming what is expected. */
    static AllowedClient parse(String text) throws ControlException {
        String t = text.strip();
        if (t.startsWith(PSK_PREFIX)) {
            String username = t.substring(PSK_PREFIX.length());
            if (username.isEmpty() || username.indexOf(':') >= 0 || username.chars().anyMatch(Character::isWhitespace)) {
                throw new ControlException(Errno.EINVAL, "allowed_clients=" + t + " (expected: psk:USERNAME, a username without ':' or spaces)");
            }
            return new Psk(username);
        }
        if (FINGERPRINT.matcher(t).matches()) {
            byte[] digest = HexFormat.of().parseHex(t.replace(":", "").toLowerCase(Locale.ROOT));
            return new Fingerprint(HexFormat.ofDelimiter(":").withUpperCase().formatHex(digest));
        }
        if (t.indexOf('=') > 0) {
            try {
                return new Subject(new X500Principal(t));
            } catch (IllegalArgumentException e) {
                throw new ControlException(Errno.EINVAL, "allowed_clients=" + t + ": not a distinguished name (" + e.getMessage()
                                                         + "); expected " + EXPECTED);
            }
        }
        throw new ControlException(Errno.EINVAL, "allowed_clients=" + t + " (expected: " + EXPECTED + ")");
    }
}
