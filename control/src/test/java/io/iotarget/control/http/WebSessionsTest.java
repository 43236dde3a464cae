package io.iotarget.control.http;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class WebSessionsTest {
    private static final long NOW = 1_000_000_000_000L;

    @Test
    void shouldRedeemACodeOnceWithinItsLifetime() {
        WebSessions web = new WebSessions();
        String code = web.newCode(NOW);
        assertNull(web.redeem(code, NOW + WebSessions.CODE_LIFETIME_NS + 1), "too late");
        String fresh = web.newCode(NOW);
        String session = web.redeem(fresh, NOW + WebSessions.CODE_LIFETIME_NS);
        assertNotNull(session);
        assertNull(web.redeem(fresh, NOW), "once");
        assertNull(web.redeem(null, NOW));
        assertFalse(web.valid(code, NOW), "a code is not a session");
        assertTrue(web.valid(session, NOW + WebSessions.SESSION_LIFETIME_NS));
        assertFalse(web.valid(session, NOW + WebSessions.CODE_LIFETIME_NS + WebSessions.SESSION_LIFETIME_NS + 1), "expired");
        assertFalse(web.valid(null, NOW));
    }

    @Test
    void shouldKeepOnlyTheNewestCodesAndSessions() {
        WebSessions web = new WebSessions();
        List<String> codes = new ArrayList<>();
        for (int i = 0; i < WebSessions.MAX_CODES + 1; i++) codes.add(web.newCode(NOW));
        assertNull(web.redeem(codes.getFirst(), NOW), "the oldest code went");
        List<String> sessions = new ArrayList<>();
        for (String c : codes.subList(1, codes.size())) sessions.add(web.redeem(c, NOW));
        for (int i = sessions.size(); i < WebSessions.MAX_SESSIONS + 1; i++) sessions.add(web.redeem(web.newCode(NOW), NOW));
        assertFalse(web.valid(sessions.getFirst(), NOW), "the oldest session went");
        assertTrue(web.valid(sessions.getLast(), NOW));
        assertTrue(web.valid(sessions.get(1), NOW));
    }
}
