package io.iotarget.control.http;

import java.security.SecureRandom;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The web view's credentials: one-time login codes, and the sessions they are exchanged for.
 * <ol>
 *   <li>{@code bin/iotarget web} asks for a code with the token ({@link #newCode}); the code is
 *       good for one login within {@link #CODE_LIFETIME_NS}.
 *   <li>The browser opens {@code /login?code=CODE}; {@link #redeem} voids the code and draws a
 *       session, which the browser keeps as an HttpOnly cookie for {@link #SESSION_LIFETIME_NS}.
 *   <li>Every request of the page carries the cookie; {@link #valid} says whether it is a live
 *       session. Sessions die with the server: none is written anywhere.
 * </ol>
 * Codes and sessions are 256 random bits, like the token, so guessing is hopeless and no rate
 * limit is needed. At most {@link #MAX_CODES} codes and {@link #MAX_SESSIONS} sessions live at
 * once (the oldest goes first), so a script asking in a loop cannot grow the server.
 * <p>
 * Any thread: every method holds the instance's monitor. Times are {@code System.nanoTime()}
 * values passed in by the caller.
 */
final class WebSessions {
    /** Long enough to paste a link into a browser, short enough that an old terminal's link is useless. */
    static final long CODE_LIFETIME_NS = 120_000_000_000L;
    /** A working day; the browser is told the same (the cookie's Max-Age). */
    static final long SESSION_LIFETIME_NS = 12 * 3600_000_000_000L;
    static final int MAX_CODES = 16;
    static final int MAX_SESSIONS = 64;
    private static final int SECRET_BYTES = 32;

    private final SecureRandom random = new SecureRandom();
    /** Secret to the time it expires, oldest first. */
    private final LinkedHashMap<String, Long> codes = new LinkedHashMap<>();
    private final LinkedHashMap<String, Long> sessions = new LinkedHashMap<>();

    /** A fresh one-time login code. */
    synchronized String newCode(long nowNs) {
        return add(codes, MAX_CODES, nowNs + CODE_LIFETIME_NS, nowNs);
    }

    /** The session for a code that is live and unused (and from now on used), or null. */
    synchronized String redeem(String code, long nowNs) {
        Long expires = code == null ? null : codes.remove(code);
        if (expires == null || expires - nowNs < 0) return null;
        return add(sessions, MAX_SESSIONS, nowNs + SESSION_LIFETIME_NS, nowNs);
    }

    /** Whether {@code session} is a live session. */
    synchronized boolean valid(String session, long nowNs) {
        Long expires = session == null ? null : sessions.get(session);
        return expires != null && expires - nowNs >= 0;
    }

    private String add(LinkedHashMap<String, Long> secrets, int max, long expiresNs, long nowNs) {
        for (Iterator<Map.Entry<String, Long>> it = secrets.entrySet().iterator(); it.hasNext(); ) {
            if (it.next().getValue() - nowNs < 0) it.remove();
        }
        while (secrets.size() >= max) secrets.pollFirstEntry();
        byte[] raw = new byte[SECRET_BYTES];
        random.nextBytes(raw);
        String secret = Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
        secrets.put(secret, expiresNs);
        return secret;
    }
}
