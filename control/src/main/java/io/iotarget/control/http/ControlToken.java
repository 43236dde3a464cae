package io.iotarget.control.http;

import io.iotarget.control.config.Ownership;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Map;

/**
 * The control endpoint's secret: 256 random bits drawn at start-up and written to a file only
 * the server's user can read, {@code ~/.local/state/iotarget/control-HOST-PORT.token} (mode
 * 0600, in a directory of mode 0700), named after the address the endpoint is bound to. The
 * CLI, run by the same user on the same machine, finds it by the address it connects to;
 * another user cannot read it, so cannot drive the server. A new start draws a new token;
 * closing removes the file.
 * <p>
 * {@code $IOTARGET_RUNTIME_DIR} replaces the directory (tests, or a service with its own).
 * The home directory is used rather than {@code $XDG_RUNTIME_DIR} or /tmp because it is the
 * same for every shell of the user (sudo, ssh, systemd strip or change the others) and nothing
 * cleans it behind a long-running server; and rather than the config's directory because that
 * is often shared or read-only (/etc/iotarget), and the CLI does not know which config a
 * server read. Instances are immutable; any thread.
 */
public final class ControlToken {
    /** Overrides the directory of token files. */
    public static final String DIRECTORY_ENV = "IOTARGET_RUNTIME_DIR";
    private static final int TOKEN_BYTES = 32;                    // 256 bits: no guessing, no rate limit needed
    private static final String BEARER = "Bearer ";

    private final Path file;
    private final byte[] token;

    private ControlToken(Path file, byte[] token) {
        this.file = file;
        this.token = token;
    }

    /** Where token files live for the user whose environment this is. */
    public static Path directory(Map<String, String> env) {
        String dir = env.get(DIRECTORY_ENV);
        return dir != null && !dir.isEmpty() ? Path.of(dir) : Path.of(System.getProperty("user.home"), ".local", "state", "iotarget");
    }

    /** The token file of the endpoint bound to {@code address}: {@code control-127.0.0.1-9809.token}. */
    public static Path file(Path directory, InetSocketAddress address) {
        return directory.resolve("control-" + address.getAddress().getHostAddress() + "-" + address.getPort() + ".token");
    }

    /**
     * Draws a token and writes it to {@code file} atomically (a reader sees the old file or the
     * whole new one), created 0600 so it is never readable by others, not even for a moment.
     * Refuses a directory that another user owns or may write to: they could swap the file.
     */
    static ControlToken create(Path file) throws IOException {
        byte[] raw = new byte[TOKEN_BYTES];
        new SecureRandom().nextBytes(raw);
        byte[] token = Base64.getUrlEncoder().withoutPadding().encode(raw);
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path temp = Files.createTempFile(dir, file.getFileName().toString(), ".new",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            Ownership.requirePrivate(dir, "token directory", "make it yours with mode 0700, or set " + DIRECTORY_ENV);
            Files.write(temp, token);
            Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(temp);
        }
        return new ControlToken(file, token);
    }

    public Path file() {
        return file;
    }

    /** Whether an Authorization header carries this token; takes the same time wherever a wrong token differs. */
    boolean matches(String authorization) {
        if (authorization == null || !authorization.regionMatches(true, 0, BEARER, 0, BEARER.length())) return false;
        byte[] given = authorization.substring(BEARER.length()).strip().getBytes(StandardCharsets.US_ASCII);
        return MessageDigest.isEqual(given, token);
    }

    /** Removes the file; the token is void from now on. */
    void delete() throws IOException {
        Files.deleteIfExists(file);
    }

    /** The client's side: the token in {@code file}, or why it cannot be had. */
    public static String read(Path file) throws TokenUnavailableException {
        try {
            return Files.readString(file, StandardCharsets.US_ASCII).strip();
        } catch (NoSuchFileException e) {
            throw new TokenUnavailableException("no token file " + file + " (a server writes it at start: is one running as this user"
                                                + " on this address? Another user's server needs --token-file)");
        } catch (AccessDeniedException e) {
            throw new TokenUnavailableException("cannot read the token file " + file + ": permission denied (only the server's user may drive it)");
        } catch (IOException e) {
            throw new TokenUnavailableException("cannot read the token file " + file + ": " + e.getMessage());
        }
    }

    /** The CLI has no token to send, and why. */
    public static final class TokenUnavailableException extends Exception {
        private static final long serialVersionUID = 1L;

        TokenUnavailableException(String message) {
            super(message);
        }
    }
}
