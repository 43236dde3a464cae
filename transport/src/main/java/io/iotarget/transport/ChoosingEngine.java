package io.iotarget.transport;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSession;
import java.nio.ByteBuffer;

/**
 * Certificates and pre-shared keys on one port: the client's first record decides. A ClientHello
 * that offers a pre-shared key (the pre_shared_key extension, 41, which TLS 1.3 puts last) goes
 * to the {@link PskEngine}; anything else to the JDK's certificate engine. Until that record is
 * whole the engine waits for input and produces nothing; from then on every call is the chosen
 * engine's. (A client resuming a certificate session with a ticket also offers a pre-shared key;
 * the NBD clients never resume, and such a client would fail to find its identity and start
 * over without the ticket.) Loop thread only.
 */
final class ChoosingEngine extends SSLEngine {
    private static final int HANDSHAKE = 22;
    private static final int CLIENT_HELLO = 1;
    private static final int PRE_SHARED_KEY = 41;

    private final PskEngine psk;
    private final SSLEngine certificates;
    private SSLEngine chosen;
    private boolean begun;
    private boolean outboundDone;

    ChoosingEngine(PskEngine psk, SSLEngine certificates) {
        this.psk = psk;
        this.certificates = certificates;
    }

    /** Whether the whole record at {@code src}'s position is a ClientHello with a pre_shared_key extension. */
    static boolean offersPsk(ByteBuffer src) {
        try {
            int p = src.position();
            if ((src.get(p) & 0xff) != HANDSHAKE) return false;
            int end = p + 5 + u16(src, p + 3);
            int q = p + 5;
            if ((src.get(q) & 0xff) != CLIENT_HELLO) return false;
            q += 4 + 2 + 32;                                // handshake header, legacy_version, random
            q += 1 + (src.get(q) & 0xff);                   // legacy_session_id
            q += 2 + u16(src, q);                           // cipher_suites
            q += 1 + (src.get(q) & 0xff);                   // legacy_compression_methods
            int extensionsEnd = Math.min(end, q + 2 + u16(src, q));
            for (q += 2; q + 4 <= extensionsEnd; q += 4 + u16(src, q + 2)) {
                if (u16(src, q) == PRE_SHARED_KEY) return true;
            }
            return false;
        } catch (IndexOutOfBoundsException truncated) {
            return false;                                   // the certificate engine will name what is wrong
        }
    }

    private static int u16(ByteBuffer b, int at) {
        return (b.get(at) & 0xff) << 8 | (b.get(at + 1) & 0xff);
    }

    @Override
    public SSLEngineResult unwrap(ByteBuffer src, ByteBuffer[] dsts, int offset, int length) throws SSLException {
        if (chosen == null) {
            if (src.remaining() < 5) return new SSLEngineResult(SSLEngineResult.Status.BUFFER_UNDERFLOW, getHandshakeStatus(), 0, 0);
            int bytes = 5 + u16(src, src.position() + 3);
            if (bytes > PskEngine.MAX_RECORD_BYTES) {
                chosen = certificates;                      // no TLS record is that long: the JDK's engine says so
            } else if (src.remaining() < bytes) {
                return new SSLEngineResult(SSLEngineResult.Status.BUFFER_UNDERFLOW, getHandshakeStatus(), 0, 0);
            } else {
                chosen = offersPsk(src) ? psk : certificates;
            }
            if (begun) chosen.beginHandshake();
            if (outboundDone) chosen.closeOutbound();
        }
        return chosen.unwrap(src, dsts, offset, length);
    }

    @Override
    public SSLEngineResult wrap(ByteBuffer[] srcs, int offset, int length, ByteBuffer dst) throws SSLException {
        if (chosen == null) {
            return new SSLEngineResult(outboundDone ? SSLEngineResult.Status.CLOSED : SSLEngineResult.Status.OK, getHandshakeStatus(), 0, 0);
        }
        return chosen.wrap(srcs, offset, length, dst);
    }

    @Override
    public void beginHandshake() throws SSLException {
        begun = true;
        if (chosen != null) chosen.beginHandshake();
    }

    @Override
    public SSLEngineResult.HandshakeStatus getHandshakeStatus() {
        if (chosen != null) return chosen.getHandshakeStatus();
        return begun && !outboundDone ? SSLEngineResult.HandshakeStatus.NEED_UNWRAP : SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING;
    }

    /** Before the choice, the certificate engine's session: its record sizes are the larger. */
    @Override
    public SSLSession getSession() {
        return (chosen != null ? chosen : certificates).getSession();
    }

    @Override
    public Runnable getDelegatedTask() {
        return chosen == null ? null : chosen.getDelegatedTask();
    }

    @Override
    public void closeInbound() throws SSLException {
        if (chosen != null) chosen.closeInbound();
    }

    @Override
    public boolean isInboundDone() {
        return chosen != null && chosen.isInboundDone();
    }

    @Override
    public void closeOutbound() {
        outboundDone = true;
        if (chosen != null) chosen.closeOutbound();
    }

    @Override
    public boolean isOutboundDone() {
        return chosen == null ? outboundDone : chosen.isOutboundDone();
    }

    @Override
    public String[] getSupportedCipherSuites() {
        return certificates.getSupportedCipherSuites();
    }

    @Override
    public String[] getEnabledCipherSuites() {
        return (chosen != null ? chosen : certificates).getEnabledCipherSuites();
    }

    @Override
    public void setEnabledCipherSuites(String[] suites) {
        certificates.setEnabledCipherSuites(suites);
    }

    @Override
    public String[] getSupportedProtocols() {
        return certificates.getSupportedProtocols();
    }

    @Override
    public String[] getEnabledProtocols() {
        return (chosen != null ? chosen : certificates).getEnabledProtocols();
    }

    @Override
    public void setEnabledProtocols(String[] protocols) {
        certificates.setEnabledProtocols(protocols);
    }

    @Override
    public void setUseClientMode(boolean client) {
        certificates.setUseClientMode(client);
    }

    @Override
    public boolean getUseClientMode() {
        return false;
    }

    @Override
    public void setNeedClientAuth(boolean need) {
        certificates.setNeedClientAuth(need);
    }

    @Override
    public boolean getNeedClientAuth() {
        return (chosen != null ? chosen : certificates).getNeedClientAuth();
    }

    @Override
    public void setWantClientAuth(boolean want) {
        certificates.setWantClientAuth(want);
    }

    @Override
    public boolean getWantClientAuth() {
        return (chosen != null ? chosen : certificates).getWantClientAuth();
    }

    @Override
    public void setEnableSessionCreation(boolean create) {
        certificates.setEnableSessionCreation(create);
    }

    @Override
    public boolean getEnableSessionCreation() {
        return certificates.getEnableSessionCreation();
    }
}
