package io.iotarget.control.config;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The one check for a file or directory whose contents the server trusts (the control token's
 * directory, {@code server.state} and its directory): it must belong to the user the server
 * runs as, and neither its group nor others may write it. Otherwise another local user could
 * put their own file there first, or swap it, and so choose what the server serves or whom it
 * lets in.
 */
public final class Ownership {
    /** The server's own uid (the effective one, as the kernel checks it). */
    private static final long UID = new com.sun.security.auth.module.UnixSystem().getUid();

    private Ownership() {
    }

    /**
     * Refuses {@code path} when another user owns it or its group or others may write it. A
     * symbolic link is checked twice: its own owner (who could point it elsewhere) and what
     * it points to.
     *
     * @param what a description for the message: {@code "token directory"}
     * @param fix  what to do about it, ending the message: {@code "make it yours with mode 0700"}
     */
    public static void requirePrivate(Path path, String what, String fix) throws IOException {
        boolean link = Files.isSymbolicLink(path);
        check(path, link, what, fix, LinkOption.NOFOLLOW_LINKS);
        if (link) check(path, false, what, fix);
    }

    private static void check(Path path, boolean link, String what, String fix, LinkOption... options) throws IOException {
        int uid = (Integer) Files.getAttribute(path, "unix:uid", options);
        Set<PosixFilePermission> mode = Files.getPosixFilePermissions(path, options);
        boolean writable = !link && (mode.contains(PosixFilePermission.GROUP_WRITE) || mode.contains(PosixFilePermission.OTHERS_WRITE));
        if (uid != UID || writable) {
            throw new IOException(what + " " + path + (link ? " (the link itself)" : "") + " is "
                                  + (uid != UID ? "owned by " + Files.getOwner(path, options).getName() + " (uid " + uid + "), not by this server's uid " + UID
                                                : "writable by others (mode " + PosixFilePermissions.toString(mode) + ")")
                                  + ", who could choose its contents; " + fix);
        }
    }
}
