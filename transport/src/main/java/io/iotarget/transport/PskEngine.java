package io.iotarget.transport;

import org.bouncycastle.tls.AbstractTlsServer;
import org.bouncycastle.tls.BasicTlsPSKExternal;
import org.bouncycastle.tls.CipherSuite;
import org.bouncycastle.tls.PRFAlgorithm;
import org.bouncycastle.tls.ProtocolVersion;
import org.bouncycastle.tls.PskIdentity;
import org.bouncycastle.tls.TlsCredentials;
import org.bouncycastle.tls.TlsPSKExternal;
import org.bouncycastle.tls.TlsServerProtocol;
import org.bouncycastle.tls.crypto.TlsCrypto;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import javax.net.ssl.SSLSessionContext;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.security.cert.Certificate;
import java.util.Vector;

/**
 * The server side of TLS 1.3 with an external pre-shared key (RFC 8446 §2.2, psk_dhe_ke:
 * the key authenticates, an ECDHE exchange gives forward secrecy), as an {@link SSLEngine} so
 * that {@link TlsLayer} drives it like the JDK's. The JDK's TLS has no external PSK; Bouncy
 * Castle's TLS protocol does the work here, in its non-blocking mode (ciphertext offered,
 * plaintext and records read back), with the JDK's AES-GCM and key agreement underneath.
 *
 * <p>Suites: TLS_AES_128_GCM_SHA256 for SHA-256 keys — what GnuTLS clients (libnbd, qemu) offer
 * with psktool keys, and NVMe/TCP's for HMAC-SHA-256 keys — and TLS_AES_256_GCM_SHA384 for
 * SHA-384 keys (NVMe/TCP's HMAC-SHA-384 keys); the key's hash decides, as the suite's hash must
 * be the PSK's. A client whose identity {@link PskKeys} does not know, or whose binder does not
 * verify (a wrong key), fails the handshake.
 *
 * <p>Records go in one at a time, and only when the destination has room for a whole record's
 * plaintext, so no plaintext is ever left inside the protocol between calls — the JDK engine's
 * contract, on which {@link TlsLayer} relies. The key exchange runs inside unwrap, on the loop:
 * one X25519 agreement (~0.1 ms), no signature, no delegated task. Loop thread only.
 */
final class PskEngine extends SSLEngine {
    private static final int HEADER_BYTES = 5;
    private static final int MAX_PLAINTEXT_BYTES = 1 << 14;
    /** The largest record a TLS 1.3 peer may send: header, then at most 2^14 + 256 bytes. */
    static final int MAX_RECORD_BYTES = HEADER_BYTES + MAX_PLAINTEXT_BYTES + 256;
    private static final int[] SHA256_SUITES = {CipherSuite.TLS_AES_128_GCM_SHA256};
    private static final int[] SHA384_SUITES = {CipherSuite.TLS_AES_256_GCM_SHA384};
    private static final String[] SUITE_NAMES = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"};
    private static final String[] PROTOCOLS = {"TLSv1.3"};

    private final TlsServerProtocol protocol = new TlsServerProtocol();
    private final Server server;
    private final Session session = new Session();
    private final byte[] record = new byte[MAX_RECORD_BYTES];
    private boolean begun;
    private boolean finishedReported;
    private boolean helloSeen;
    private boolean inboundDone;
    private boolean outboundDone;
    /** The identity of the key found in the client's hello; proved once the handshake is done. */
    private String identity;

    PskEngine(TlsCrypto crypto, PskKeys keys) {
        this.server = new Server(crypto, keys);
    }

    private final class Server extends AbstractTlsServer {
        private final PskKeys keys;
        /** The key of the first offered identity {@link PskKeys} knows, found before Bouncy Castle reads the hello; null: none. */
        private PskKeys.Psk psk;

        Server(TlsCrypto crypto, PskKeys keys) {
            super(crypto);
            this.keys = keys;
        }

        @Override
        protected ProtocolVersion[] getSupportedVersions() {
            return ProtocolVersion.TLSv13.only();
        }

        @Override
        protected int[] getSupportedCipherSuites() {
            return getCipherSuites();
        }

        /** Asked when the suite is chosen (the inherited one keeps what it was at the start). */
        @Override
        public int[] getCipherSuites() {
            return psk != null && psk.sha384() ? SHA384_SUITES : SHA256_SUITES;
        }

        /**
         * Bouncy Castle picks the suite before it asks for the key, and does not check that their
         * hashes agree: so the key is looked up first, from the hello itself.
         */
        void choose(ByteBuffer hello) {
            for (String name : ClientHello.pskIdentities(hello)) {
                psk = keys.find(name);
                if (psk != null) {
                    identity = name;
                    return;
                }
            }
        }

        /** The suite chosen, by name, or null before. */
        String cipherSuite() {
            if (context == null || context.getSecurityParametersConnection() == null) return null;
            int suite = context.getSecurityParametersConnection().getCipherSuite();
            return suite == CipherSuite.TLS_AES_256_GCM_SHA384 ? SUITE_NAMES[1] : SUITE_NAMES[0];
        }

        @Override
        public TlsCredentials getCredentials() {
            return null;                                    // no certificate: a client without a known key fails the handshake
        }

        @Override
        @SuppressWarnings("rawtypes")                       // Bouncy Castle's signature
        public TlsPSKExternal getExternalPSK(Vector identities) {
            if (psk == null) return null;
            for (Object o : identities) {
                byte[] id = ((PskIdentity) o).getIdentity();
                if (identity.equals(new String(id, StandardCharsets.UTF_8))) {
                    return new BasicTlsPSKExternal(id, getCrypto().createSecret(psk.key()),
                            psk.sha384() ? PRFAlgorithm.tls13_hkdf_sha384 : PRFAlgorithm.tls13_hkdf_sha256);
                }
            }
            return null;
        }
    }

    @Override
    public void beginHandshake() throws SSLException {
        if (begun) return;
        begun = true;
        try {
            protocol.accept(server);
        } catch (IOException e) {
            throw new SSLException(e);
        }
    }

    @Override
    public SSLEngineResult wrap(ByteBuffer[] srcs, int offset, int length, ByteBuffer dst) throws SSLException {
        int consumed = 0;
        if (!outboundDone && protocol.isConnected() && protocol.getAvailableOutputBytes() == 0) {
            int n = 0;
            for (int i = offset; i < offset + length && n < MAX_PLAINTEXT_BYTES; i++) {
                int take = Math.min(srcs[i].remaining(), MAX_PLAINTEXT_BYTES - n);
                srcs[i].get(record, n, take);
                n += take;
            }
            if (n > 0) {
                try {
                    protocol.writeApplicationData(record, 0, n);
                } catch (IOException e) {
                    throw new SSLException(e);
                }
                consumed = n;
            }
        }
        int available = protocol.getAvailableOutputBytes();
        // Closed by the peer's close_notify too: Bouncy Castle ends both directions then, and nothing can be sent.
        if (available == 0 && (outboundDone || protocol.isClosed())) return result(SSLEngineResult.Status.CLOSED, consumed, 0);
        if (available > 0 && !dst.hasRemaining()) return result(SSLEngineResult.Status.BUFFER_OVERFLOW, consumed, 0);
        int produced = available == 0 ? 0 : protocol.readOutput(dst, Math.min(available, dst.remaining()));
        return result(SSLEngineResult.Status.OK, consumed, produced);
    }

    @Override
    public SSLEngineResult unwrap(ByteBuffer src, ByteBuffer[] dsts, int offset, int length) throws SSLException {
        if (inboundDone) return result(SSLEngineResult.Status.CLOSED, 0, 0);
        if (src.remaining() < HEADER_BYTES) return result(SSLEngineResult.Status.BUFFER_UNDERFLOW, 0, 0);
        int bytes = HEADER_BYTES + ((src.get(src.position() + 3) & 0xff) << 8 | (src.get(src.position() + 4) & 0xff));
        if (bytes > MAX_RECORD_BYTES) throw new SSLException("a TLS record of " + (bytes - HEADER_BYTES) + " bytes (at most 2^14 + 256)");
        if (src.remaining() < bytes) return result(SSLEngineResult.Status.BUFFER_UNDERFLOW, 0, 0);
        long room = 0;
        for (int i = offset; i < offset + length; i++) room += dsts[i].remaining();
        if (room < MAX_PLAINTEXT_BYTES) return result(SSLEngineResult.Status.BUFFER_OVERFLOW, 0, 0);
        if (!helloSeen) {
            helloSeen = true;
            server.choose(src);
        }
        src.get(record, 0, bytes);
        try {
            protocol.offerInput(record, 0, bytes);
        } catch (IOException e) {
            throw new SSLException(e);
        }
        int produced = 0;
        for (int i = offset; i < offset + length && protocol.getAvailableInputBytes() > 0; i++) {
            produced += protocol.readInput(dsts[i], Math.min(dsts[i].remaining(), protocol.getAvailableInputBytes()));
        }
        if (protocol.isClosed()) {
            inboundDone = true;
            return result(SSLEngineResult.Status.CLOSED, bytes, produced);
        }
        return result(SSLEngineResult.Status.OK, bytes, produced);
    }

    /** A result with the handshake status now; FINISHED once, on the call after which the handshake is done and nothing of it is left to send. */
    private SSLEngineResult result(SSLEngineResult.Status status, int consumed, int produced) {
        SSLEngineResult.HandshakeStatus hs = getHandshakeStatus();
        if (!finishedReported && protocol.isConnected() && hs == SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING) {
            finishedReported = true;
            hs = SSLEngineResult.HandshakeStatus.FINISHED;
        }
        return new SSLEngineResult(status, hs, consumed, produced);
    }

    @Override
    public SSLEngineResult.HandshakeStatus getHandshakeStatus() {
        if (protocol.getAvailableOutputBytes() > 0) return SSLEngineResult.HandshakeStatus.NEED_WRAP;
        if (begun && !protocol.isConnected() && !protocol.isClosed()) return SSLEngineResult.HandshakeStatus.NEED_UNWRAP;
        return SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING;
    }

    @Override
    public Runnable getDelegatedTask() {
        return null;
    }

    @Override
    public void closeInbound() {
        inboundDone = true;
    }

    @Override
    public boolean isInboundDone() {
        return inboundDone;
    }

    @Override
    public void closeOutbound() {
        if (outboundDone) return;
        outboundDone = true;
        try {
            protocol.close();                               // close_notify, queued for wrap
        } catch (IOException e) {
            // the session failed already: its alert, if any, is queued
        }
    }

    @Override
    public boolean isOutboundDone() {
        return outboundDone && protocol.getAvailableOutputBytes() == 0;
    }

    @Override
    public String[] getSupportedCipherSuites() {
        return SUITE_NAMES.clone();
    }

    @Override
    public String[] getEnabledCipherSuites() {
        return SUITE_NAMES.clone();
    }

    @Override
    public void setEnabledCipherSuites(String[] suites) {
        throw new UnsupportedOperationException("the PSK engine's suite follows the key's hash");
    }

    @Override
    public String[] getSupportedProtocols() {
        return PROTOCOLS.clone();
    }

    @Override
    public String[] getEnabledProtocols() {
        return PROTOCOLS.clone();
    }

    @Override
    public void setEnabledProtocols(String[] protocols) {
        throw new UnsupportedOperationException("the PSK engine speaks TLS 1.3 only");
    }

    @Override
    public SSLSession getSession() {
        return session;
    }

    @Override
    public void setUseClientMode(boolean client) {
        if (client) throw new UnsupportedOperationException("the PSK engine is a server");
    }

    @Override
    public boolean getUseClientMode() {
        return false;
    }

    @Override
    public void setNeedClientAuth(boolean need) {
    }

    @Override
    public boolean getNeedClientAuth() {
        return true;                                        // the key is the client's authentication
    }

    @Override
    public void setWantClientAuth(boolean want) {
    }

    @Override
    public boolean getWantClientAuth() {
        return true;
    }

    @Override
    public void setEnableSessionCreation(boolean create) {
    }

    @Override
    public boolean getEnableSessionCreation() {
        return true;
    }

    /** The session as {@link TlsLayer} and the protocols read it: sizes, protocol, and the identity as the peer principal. */
    private final class Session implements SSLSession {
        private final long createdMs = System.currentTimeMillis();

        @Override
        public int getPacketBufferSize() {
            return MAX_RECORD_BYTES;
        }

        @Override
        public int getApplicationBufferSize() {
            return MAX_PLAINTEXT_BYTES;
        }

        @Override
        public String getProtocol() {
            return PROTOCOLS[0];
        }

        @Override
        public String getCipherSuite() {
            return server.cipherSuite();
        }

        @Override
        public Principal getPeerPrincipal() throws SSLPeerUnverifiedException {
            if (!protocol.isConnected() || identity == null) throw new SSLPeerUnverifiedException("no pre-shared key proved yet");
            return new TlsPsk.Identity(identity);
        }

        @Override
        public Certificate[] getPeerCertificates() throws SSLPeerUnverifiedException {
            throw new SSLPeerUnverifiedException("a pre-shared key session has no certificates");
        }

        @Override
        public Certificate[] getLocalCertificates() {
            return null;
        }

        @Override
        public Principal getLocalPrincipal() {
            return null;
        }

        @Override
        public byte[] getId() {
            return new byte[0];
        }

        @Override
        public SSLSessionContext getSessionContext() {
            return null;
        }

        @Override
        public long getCreationTime() {
            return createdMs;
        }

        @Override
        public long getLastAccessedTime() {
            return createdMs;
        }

        @Override
        public void invalidate() {
        }

        @Override
        public boolean isValid() {
            return protocol.isConnected();
        }

        @Override
        public void putValue(String name, Object value) {
            throw new UnsupportedOperationException("no session values");
        }

        @Override
        public Object getValue(String name) {
            return null;
        }

        @Override
        public void removeValue(String name) {
        }

        @Override
        public String[] getValueNames() {
            return new String[0];
        }

        @Override
        public String getPeerHost() {
            return null;
        }

        @Override
        public int getPeerPort() {
            return -1;
        }
    }
}
