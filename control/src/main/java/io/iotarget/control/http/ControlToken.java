package io.iotarget.control.http;

import com.sun.security.auth.module.UnixSystem;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.Base64;
import java.util.Deque;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The control endpoint's secret: 256 random bits drawn at start-up and written to a file only
 * the server's user can read, {@code ~/.local/state/iotarget/control-HOST-PORT.token} (mode
 * 0600, in a directory of mode 0700), named after the address the endpoint is bound to. The
 * CLI, run by the same user on the same machine, finds it by the address it connects to;
 * another user cannot read it, so cannot drive the server. A new start draws a new token;
 * closing removes the file — the one this server wrote, and no other.
 * <p>
 * {@code $IOTARGET_RUNTIME_DIR} replaces the directory (tests, or a service with its own).
 * The home directory is used rather than {@code $XDG_RUNTIME_DIR} or /tmp because it is the
 * same for every shell of the user (sudo, ssh, systemd strip or change the others) and nothing
 * cleans it behind a long-running server; and rather than the config's directory because that
 * is often shared or read-only (/etc/iotarget), and the CLI does not know which config a
 * server read. Instances are immutable; any thread.
 *
 * <h2>1. The server proves it holds the token before the CLI sends anything</h2>
 * A token file outlives a server killed with -9, and any user may listen on the port once the
 * server is gone. So the CLI sends a random challenge first, and sends the token or a request
 * only after the listener answered {@link #proof} of it: an HMAC-SHA256 keyed by the token,
 * over the challenge and the Host the CLI named. Only a process that read the file can answer;
 * the Host in it keeps a listener on another address from relaying the question to the real
 * server and passing its answer off as its own.
 *
 * <h2>2. No link another user controls is followed</h2>
 * The directory is checked component by component from / ({@link #requireTrusted}): each one
 * and each symbolic link on the way must be owned by this user or root, and a directory others
 * may write to must be sticky (/tmp) and then its entry must be this user's or root's. Nobody
 * else can then swap a component, so the file is opened without following a link
 * ({@code O_NOFOLLOW}) and must be a regular file of this user's, mode 0600 or stricter.
 */
public final class ControlToken {
    /** Overrides the directory of token files. */
    public static final String DIRECTORY_ENV = "IOTARGET_RUNTIME_DIR";
    private static final int TOKEN_BYTES = 32;                    // 256 bits: no guessing, no rate limit needed
    /** A token file is 43 characters; anything much longer is not one. */
    private static final int MAX_FILE_BYTES = 4096;
    private static final String BEARER = "Bearer ";
    private static final String PROOF_CONTEXT = "iotarget control proof\n";
    /** Linux's limit on the links one path lookup follows (MAXSYMLINKS). */
    private static final int MAX_LINKS = 40;
    private static final int ROOT_UID = 0;
    private static final int S_IFMT = 0170000, S_IFDIR = 0040000, S_IFREG = 0100000, S_IFLNK = 0120000;
    private static final int S_ISVTX = 01000, GROUP_OTHER_WRITE = 0022, GROUP_OTHER_ANY = 0077;
    private static final long MY_UID = new UnixSystem().getUid();

    private final Path file;
    private final byte[] token;
    /** The directory the file was written in, held open: close deletes from it even if its path was re-pointed. */
    private final SecureDirectoryStream<Path> directory;
    /** The written file's device and inode: close deletes only that file. */
    private final Object fileKey;

    private ControlToken(Path file, byte[] token, SecureDirectoryStream<Path> directory, Object fileKey) {
        this.file = file;
        this.token = token;
        this.directory = directory;
        this.fileKey = fileKey;
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
     * Refuses a directory that another user could swap or re-point (section 2).
     */
    static ControlToken create(Path file) throws IOException {
        byte[] raw = new byte[TOKEN_BYTES];
        new SecureRandom().nextBytes(raw);
        byte[] token = Base64.getUrlEncoder().withoutPadding().encode(raw);
        Path dir = file.toAbsolutePath().getParent();
        Path existing = dir;
        while (!Files.exists(existing, LinkOption.NOFOLLOW_LINKS)) existing = existing.getParent();
        requireTrusted(existing);                                    // before creating anything under it
        Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        requireTrusted(dir);
        DirectoryStream<Path> opened = Files.newDirectoryStream(dir);
        if (!(opened instanceof SecureDirectoryStream<Path> held)) {
            opened.close();
            throw new IOException("token directory " + dir + ": this file system cannot hold a directory open (no openat)");
        }
        Path temp = null;
        try {
            temp = Files.createTempFile(dir, file.getFileName().toString(), ".new",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.write(temp, token, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
            Object key = Files.readAttributes(temp, java.nio.file.attribute.BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
            Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            return new ControlToken(file, token, held, key);
        } catch (IOException | RuntimeException e) {
            held.close();
            throw e;
        } finally {
            if (temp != null) Files.deleteIfExists(temp);
        }
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

    /** The server's answer to a challenge sent with {@code host} as the Host header (section 1). */
    String prove(String challenge, String host) {
        return proof(token, challenge, host);
    }

    /** Base64url of HMAC-SHA256(token, context, challenge, host): what both sides compute. */
    static String proof(byte[] token, String challenge, String host) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(token, "HmacSHA256"));
            byte[] tag = mac.doFinal((PROOF_CONTEXT + challenge + "\n" + host).getBytes(StandardCharsets.UTF_8));
            return Base64.getUrlEncoder().withoutPadding().encodeToString(tag);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }

    /**
     * Removes the file this server wrote, through the directory it wrote it in; a file of that
     * name that is not the one (replaced by hand, another server's) is left alone: it must have
     * the same device and inode and still hold this token (a freed inode number is soon reused).
     * The token is void from now on.
     */
    void delete() throws IOException {
        Path name = file.getFileName();
        try (directory) {
            Object now = directory.getFileAttributeView(name, BasicFileAttributeView.class, LinkOption.NOFOLLOW_LINKS).readAttributes().fileKey();
            byte[] held;
            try (InputStream in = Channels.newInputStream(directory.newByteChannel(name, Set.of(StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)))) {
                held = in.readNBytes(token.length + 1);
            }
            if (!Objects.equals(now, fileKey) || !MessageDigest.isEqual(held, token)) {
                throw new IOException("the token file " + file + " is no longer the one this server wrote; left it alone");
            }
            directory.deleteFile(name);
        } catch (NoSuchFileException gone) {
            // removed already: nothing to do
        }
    }

    /**
     * The client's side: the token in {@code file}, read only if nobody but this user (or root)
     * could have put it or a link on its path (section 2), or why it cannot be had.
     */
    public static String read(Path file) throws TokenUnavailableException {
        try {
            requireTrusted(file.toAbsolutePath().getParent());
            Map<String, Object> a = Files.readAttributes(file, "unix:uid,mode", LinkOption.NOFOLLOW_LINKS);
            int mode = (Integer) a.get("mode");
            if ((mode & S_IFMT) != S_IFREG) {
                throw new TokenUnavailableException("the token file " + file + " is " + ((mode & S_IFMT) == S_IFLNK ? "a symbolic link" : "not a regular file")
                                                    + "; refused (a server writes a regular file)");
            }
            if ((Integer) a.get("uid") != MY_UID || (mode & GROUP_OTHER_ANY) != 0) {
                throw new TokenUnavailableException("the token file " + file + " is owned by uid " + a.get("uid") + " with mode "
                                                    + String.format("%04o", mode & 07777) + "; refused: it must be this user's (uid " + MY_UID
                                                    + ") and mode 0600, as a server writes it");
            }
            try (InputStream in = Channels.newInputStream(Files.newByteChannel(file, Set.of(StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)))) {
                String token = new String(in.readNBytes(MAX_FILE_BYTES + 1), StandardCharsets.US_ASCII).strip();
                if (token.isEmpty() || token.length() > MAX_FILE_BYTES) throw new TokenUnavailableException("the token file " + file + " holds no token");
                return token;
            }
        } catch (NoSuchFileException e) {
            throw new TokenUnavailableException("no token file " + file + " (a server writes it at start: is one running as this user"
                                                + " on this address? Another user's server needs --token-file)");
        } catch (AccessDeniedException e) {
            throw new TokenUnavailableException("cannot read the token file " + file + ": permission denied (only the server's user may drive it)");
        } catch (IOException e) {
            throw new TokenUnavailableException("cannot read the token file " + file + ": " + e.getMessage());
        }
    }

    /**
     * Walks {@code dir} from / without following a link it has not checked: throws unless each
     * component (and each link, and what the link names) is owned by this user or root, and no
     * user but those could rename, replace or re-point it (section 2).
     */
    static void requireTrusted(Path dir) throws IOException {
        Path absolute = dir.toAbsolutePath();
        Path at = absolute.getRoot();
        Deque<String> todo = new ArrayDeque<>();
        for (Path name : absolute) todo.add(name.toString());
        int atMode = checkedMode(dir, at, null);
        int links = 0;
        while (!todo.isEmpty()) {
            String name = todo.pop();
            if (name.equals(".")) continue;
            if (name.equals("..")) {
                at = at.getParent() == null ? at : at.getParent();
                atMode = checkedMode(dir, at, null);
                continue;
            }
            Path next = at.resolve(name);
            int mode = checkedMode(dir, next, (atMode & GROUP_OTHER_WRITE) != 0 && (atMode & S_ISVTX) != 0 ? at : null);
            if ((atMode & GROUP_OTHER_WRITE) != 0 && (atMode & S_ISVTX) == 0) {
                throw untrusted(dir, at, "may be written by other users (mode " + String.format("%04o", atMode & 07777) + "), who could replace " + name);
            }
            if ((mode & S_IFMT) == S_IFLNK) {
                if (++links > MAX_LINKS) throw untrusted(dir, next, "too many symbolic links");
                Path target = Files.readSymbolicLink(next);
                Deque<String> resolved = new ArrayDeque<>();
                for (Path n : target) resolved.add(n.toString());
                while (!resolved.isEmpty()) todo.push(resolved.removeLast());
                if (target.isAbsolute()) {
                    at = target.getRoot();
                    atMode = checkedMode(dir, at, null);
                }
                continue;
            }
            if ((mode & S_IFMT) != S_IFDIR) throw untrusted(dir, next, "is not a directory");
            at = next;
            atMode = mode;
        }
        if ((atMode & GROUP_OTHER_WRITE) != 0) {
            throw untrusted(dir, at, "may be written by other users (mode " + String.format("%04o", atMode & 07777) + "); make it mode 0700");
        }
    }

    /** The mode of {@code path} itself (a link is not followed); throws if it is not this user's or root's. */
    private static int checkedMode(Path dir, Path path, Path stickyParent) throws IOException {
        Map<String, Object> a = Files.readAttributes(path, "unix:uid,mode", LinkOption.NOFOLLOW_LINKS);
        int uid = (Integer) a.get("uid");
        if (uid != MY_UID && uid != ROOT_UID) {
            throw untrusted(dir, path, "is owned by uid " + uid + (stickyParent == null ? "" : " (in " + stickyParent + ", which others may write)")
                                        + ", not by this user (uid " + MY_UID + ") or root");
        }
        return (Integer) a.get("mode");
    }

    private static IOException untrusted(Path dir, Path component, String why) {
        String where = component.equals(dir) ? dir.toString() : dir + ": " + component;
        return new IOException("token directory " + where + " " + why + "; refused: another user could swap the token file"
                               + " (use a directory only this user can change, or set " + DIRECTORY_ENV + ")");
    }

    /** The CLI has no token to send, and why. */
    public static final class TokenUnavailableException extends Exception {
        private static final long serialVersionUID = 1L;

        TokenUnavailableException(String message) {
            super(message);
        }
    }
}
