package io.iotarget.frontend.nbd;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Consumer;

/**
 * The option haggling of one connection: takes the decoder's events, answers each option and
 * says when transmission starts or the connection must end. Pure protocol logic: replies go
 * to a sink as ready-to-send buffers, so tests drive it without sockets. The connection's
 * loop thread only.
 *
 * <h2>TLS</h2>
 * The mode is fixed when the connection opens, as the spec asks, from the server's credentials
 * and exports then:
 * <ul>
 * <li>NOTLS (no credentials): STARTTLS gets ERR_UNSUP; nothing ever gets ERR_TLS_REQD.</li>
 * <li>FORCEDTLS (credentials, and every enabled export needs TLS — nbdkit's {@code --tls=require},
 * qemu-nbd with {@code --tls-creds}): before TLS every option but STARTTLS and ABORT gets
 * ERR_TLS_REQD, and EXPORT_NAME hangs up.</li>
 * <li>SELECTIVETLS (credentials, and some export is open without TLS): before TLS, LIST shows
 * only the exports open without TLS; INFO/GO on any other name — TLS-only or unknown alike,
 * so names cannot be probed — get ERR_TLS_REQD.</li>
 * </ul>
 * STARTTLS is answered ACK ({@link Next#START_TLS}: the connection switches) and forgets what was
 * negotiated before it (structured replies, metadata contexts), since a man in the middle may
 * have chosen them; a second STARTTLS gets ERR_INVALID. After TLS the client is who its
 * certificate says ({@link ClientIdentity}): LIST shows only the exports it may open
 * ({@link Export#admits}), and INFO, GO and the META_CONTEXT options answer for an export it may
 * not open exactly as for one that does not exist (ERR_UNKNOWN, same message); EXPORT_NAME hangs
 * up on it.
 *
 * <p>Other policy choices: the empty export name means the export named
 * {@value ExportTree#DEFAULT_EXPORT}, as nbd-server's default export; INFO/GO always send
 * NBD_INFO_BLOCK_SIZE (requests that break it get EINVAL, so a client that did not ask is never
 * refused); the only metadata context is {@code base:allocation}; NBD_INFO_DESCRIPTION is made
 * for the client that asks ({@link Describer}: on a server, the client's own QoS after the
 * operator's text, {@link QosDescription}), while LIST shows the operator's text alone.
 */
final class Negotiation {
    /*  Option reply (20-byte header + data)
     *  0                        8            12           16           20
     *  | OPTION_REPLY_MAGIC u64 | option u32 | type u32   | length u32 | data ...
     */
    static final int REPLY_HEADER_BYTES = 20;
    /** EXPORT_NAME's reply: size (u64), transmission flags (u16), then 124 zeroes unless NO_ZEROES. */
    static final int EXPORT_NAME_REPLY_BYTES = 10;
    static final int EXPORT_NAME_ZEROES = 124;

    /** Where negotiation finds exports. Any thread. */
    interface Exports {
        /** The enabled export with this name ("" = the default export), or null. */
        Export find(String name);

        /** Enabled exports, for NBD_OPT_LIST. */
        List<Export> enabled();

        /** Why a new client may not transmit on the export now (its connection limit), or null. */
        String refusal(Export export);

        /** True while the server is closing: options get ERR_SHUTDOWN. */
        boolean shuttingDown();

        /** The largest READ/WRITE payload, in bytes, for a client connecting now ({@code max_request}). */
        int maxRequest();

        /** The server's TLS credentials, or null when it serves no TLS. */
        TlsCredentials tls();
    }

    /**
     * The text of NBD_INFO_DESCRIPTION for {@code export} as {@code client} asks for it (the
     * operator's description and the client's own QoS, {@link QosDescription}); empty sends
     * none. Called on the connection's loop thread.
     */
    @FunctionalInterface
    interface Describer {
        String describe(Export export, ClientIdentity client);
    }

    /** What the connection does after an event: go on, enter transmission, switch to TLS, or hang up. */
    enum Next { CONTINUE, TRANSMIT, START_TLS, CLOSE }

    private final Exports exports;
    private final Describer describer;
    /** Why every option is refused (the connection is over a server limit), or null. */
    private final String refusal;
    /** The credentials this connection may switch to TLS with, or null (NOTLS); taken once, as the mode. */
    private final TlsCredentials tls;
    /** FORCEDTLS: until TLS, every option but STARTTLS and ABORT gets ERR_TLS_REQD. */
    private final boolean forcedTls;
    private ClientIdentity client = ClientIdentity.PLAINTEXT;
    private boolean fixedNewstyle;
    private boolean noZeroes;
    private boolean structuredReplies;
    private String metaExportName;
    private boolean baseAllocationSelected;
    private Export chosen;

    /** The largest READ/WRITE payload, as the server's max_request was when the client connected; advertised and enforced. */
    private final int maxRequest;

    /** A negotiation whose descriptions are the operator's alone. */
    Negotiation(Exports exports, String refusal) {
        this(exports, refusal, (export, client) -> export.description());
    }

    Negotiation(Exports exports, String refusal, Describer describer) {
        this.exports = exports;
        this.describer = describer;
        this.refusal = refusal;
        this.tls = exports.tls();
        this.maxRequest = exports.maxRequest();
        this.forcedTls = tls != null && exports.enabled().stream().allMatch(Export::tls);
    }

    /** The largest READ/WRITE payload this client was told (NBD_INFO_BLOCK_SIZE) or may assume. */
    int maxRequest() {
        return maxRequest;
    }

    /** The credentials for the switch that {@link Next#START_TLS} asks for. */
    TlsCredentials tlsCredentials() {
        return tls;
    }

    /** The TLS handshake finished: the client is {@code identity} from now on. */
    void tlsEstablished(ClientIdentity identity) {
        client = identity;
    }

    /** Who the client is: {@link ClientIdentity#PLAINTEXT} until TLS. */
    ClientIdentity client() {
        return client;
    }

    /** The export transmission runs on; set when {@link Next#TRANSMIT} was returned. */
    Export export() {
        return chosen;
    }

    boolean structuredReplies() {
        return structuredReplies;
    }

    /** BLOCK_STATUS is allowed: base:allocation was selected for the export that was then chosen. */
    boolean blockStatusAllowed() {
        return chosen != null && baseAllocationSelected && chosen.name().equals(metaExportName);
    }

    /** The 18 bytes the server sends first: NBDMAGIC, IHAVEOPT, handshake flags. */
    static ByteBuffer greeting() {
        return ByteBuffer.allocate(18).putLong(NbdWire.NBD_MAGIC).putLong(NbdWire.IHAVEOPT)
                .putShort((short) NbdWire.HANDSHAKE_FLAGS).flip();
    }

    /** Client flags: unknown bits, or bits the server did not offer, end the connection (spec MUST). */
    Next clientFlags(int flags) {
        if ((flags & ~(NbdWire.FLAG_C_FIXED_NEWSTYLE | NbdWire.FLAG_C_NO_ZEROES)) != 0) return Next.CLOSE;
        fixedNewstyle = (flags & NbdWire.FLAG_C_FIXED_NEWSTYLE) != 0;
        noZeroes = (flags & NbdWire.FLAG_C_NO_ZEROES) != 0;
        return Next.CONTINUE;
    }

    /** Oversized option data (already skipped): an error the client can live with. */
    Next tooBig(OptionDecoder.TooBig option, Consumer<ByteBuffer> out) {
        if (option.code() == NbdWire.OPT_EXPORT_NAME || !fixedNewstyle) return Next.CLOSE;
        out.accept(error(option.code(), NbdWire.REP_ERR_TOO_BIG,
                "option data of " + option.length() + " bytes (expected: at most " + OptionDecoder.MAX_OPTION_DATA + ")"));
        return Next.CONTINUE;
    }

    /** Answers one option. */
    Next option(OptionDecoder.Option option, Consumer<ByteBuffer> out) {
        int code = option.code();
        byte[] data = option.data();
        if (code == NbdWire.OPT_EXPORT_NAME) return refusal == null ? exportName(data, out) : Next.CLOSE;
        // Non-fixed newstyle knows no other option and has no way to say so: hang up.
        if (!fixedNewstyle) return Next.CLOSE;
        if (code == NbdWire.OPT_ABORT) {
            out.accept(reply(code, NbdWire.REP_ACK, 0).flip());
            return Next.CLOSE;
        }
        if (refusal != null) {
            out.accept(error(code, NbdWire.REP_ERR_POLICY, refusal));
            return Next.CONTINUE;
        }
        if (exports.shuttingDown()) {
            out.accept(error(code, NbdWire.REP_ERR_SHUTDOWN, "server shutting down"));
            return Next.CONTINUE;
        }
        if (code == NbdWire.OPT_STARTTLS) return startTls(data, out);
        if (forcedTls && !client.tls()) {
            out.accept(error(code, NbdWire.REP_ERR_TLS_REQD, "this server requires TLS first (NBD_OPT_STARTTLS)"));
            return Next.CONTINUE;
        }
        switch (code) {
            case NbdWire.OPT_LIST -> list(data, out);
            case NbdWire.OPT_INFO, NbdWire.OPT_GO -> {
                return infoOrGo(code, data, out);
            }
            case NbdWire.OPT_STRUCTURED_REPLY -> {
                if (data.length != 0) {
                    out.accept(error(code, NbdWire.REP_ERR_INVALID, "NBD_OPT_STRUCTURED_REPLY takes no data"));
                } else {
                    structuredReplies = true;
                    out.accept(reply(code, NbdWire.REP_ACK, 0).flip());
                }
            }
            case NbdWire.OPT_LIST_META_CONTEXT, NbdWire.OPT_SET_META_CONTEXT -> metaContext(code, data, out);
            default -> out.accept(error(code, NbdWire.REP_ERR_UNSUP, "option " + code + " is not supported"));
        }
        return Next.CONTINUE;
    }

    private Next startTls(byte[] data, Consumer<ByteBuffer> out) {
        int code = NbdWire.OPT_STARTTLS;
        if (tls == null) {
            out.accept(error(code, NbdWire.REP_ERR_UNSUP, "this server has no TLS credentials"));
            return Next.CONTINUE;
        }
        if (data.length != 0) return invalid(code, out, "NBD_OPT_STARTTLS takes no data");
        if (client.tls()) return invalid(code, out, "TLS is already on");
        structuredReplies = false;
        metaExportName = null;
        baseAllocationSelected = false;
        out.accept(reply(code, NbdWire.REP_ACK, 0).flip());
        return Next.START_TLS;
    }

    private Next exportName(byte[] data, Consumer<ByteBuffer> out) {
        // EXPORT_NAME cannot carry an error: an unknown export, one this client may not open, or a closing server means hanging up.
        if (exports.shuttingDown() || data.length > NbdWire.MAX_STRING) return Next.CLOSE;
        Export export = exports.find(new String(data, StandardCharsets.UTF_8));
        if (export == null || !export.admits(client) || exports.refusal(export) != null) return Next.CLOSE;
        ByteBuffer b = ByteBuffer.allocate(EXPORT_NAME_REPLY_BYTES + (noZeroes ? 0 : EXPORT_NAME_ZEROES));
        b.putLong(export.device().sizeBytes()).putShort((short) export.transmissionFlags(structuredReplies));
        out.accept(b.clear());
        chosen = export;
        return Next.TRANSMIT;
    }

    private void list(byte[] data, Consumer<ByteBuffer> out) {
        if (data.length != 0) {
            out.accept(error(NbdWire.OPT_LIST, NbdWire.REP_ERR_INVALID, "NBD_OPT_LIST takes no data"));
            return;
        }
        for (Export e : exports.enabled()) {
            if (!e.admits(client)) continue;
            byte[] name = e.name().getBytes(StandardCharsets.UTF_8);
            byte[] description = e.description().getBytes(StandardCharsets.UTF_8);
            out.accept(reply(NbdWire.OPT_LIST, NbdWire.REP_SERVER, 4 + name.length + description.length)
                    .putInt(name.length).put(name).put(description).flip());
        }
        out.accept(reply(NbdWire.OPT_LIST, NbdWire.REP_ACK, 0).flip());
    }

    /*  INFO / GO data
     *  | name length u32 | name | request count u16 | count × info type u16 |
     */
    private Next infoOrGo(int code, byte[] data, Consumer<ByteBuffer> out) {
        ByteBuffer in = ByteBuffer.wrap(data);
        if (data.length < 6) return invalid(code, out, "data of " + data.length + " bytes (expected: at least 6)");
        long nameLength = Integer.toUnsignedLong(in.getInt());
        if (nameLength > data.length - 6) return invalid(code, out, "name length " + nameLength + " overruns the option");
        if (nameLength > NbdWire.MAX_STRING) return invalid(code, out, "name of " + nameLength + " bytes (expected: at most 4096)");
        String name = string(in, (int) nameLength);
        int requests = Short.toUnsignedInt(in.getShort());
        if (in.remaining() != requests * 2) {
            return invalid(code, out, requests + " information requests do not fill the remaining " + in.remaining() + " bytes");
        }
        boolean wantName = false;
        boolean wantDescription = false;
        for (int i = 0; i < requests; i++) {
            int type = Short.toUnsignedInt(in.getShort());
            if (type == NbdWire.INFO_NAME) wantName = true;
            if (type == NbdWire.INFO_DESCRIPTION) wantDescription = true;
        }
        Export export = exports.find(name);
        if (export == null || !export.admits(client)) {
            if (tls != null && !client.tls()) {
                // SELECTIVETLS: the same answer for a TLS-only export and an unknown name, so names cannot be probed.
                out.accept(error(code, NbdWire.REP_ERR_TLS_REQD, "no export named '" + name + "' is open without TLS (NBD_OPT_STARTTLS first)"));
            } else {
                out.accept(error(code, NbdWire.REP_ERR_UNKNOWN, "no export named '" + name + "'"));
            }
            return Next.CONTINUE;
        }
        String refusal = code == NbdWire.OPT_GO ? exports.refusal(export) : null;
        if (refusal != null) {
            out.accept(error(code, NbdWire.REP_ERR_POLICY, refusal));
            return Next.CONTINUE;
        }
        out.accept(reply(code, NbdWire.REP_INFO, 12).putShort((short) NbdWire.INFO_EXPORT)
                .putLong(export.device().sizeBytes()).putShort((short) export.transmissionFlags(structuredReplies)).flip());
        out.accept(reply(code, NbdWire.REP_INFO, 14).putShort((short) NbdWire.INFO_BLOCK_SIZE)
                .putInt(export.minimumBlockSize()).putInt(export.preferredBlockSize()).putInt(maxRequest).flip());
        if (wantName) {
            byte[] canonical = export.name().getBytes(StandardCharsets.UTF_8);
            out.accept(reply(code, NbdWire.REP_INFO, 2 + canonical.length).putShort((short) NbdWire.INFO_NAME).put(canonical).flip());
        }
        String description = wantDescription ? describer.describe(export, client) : "";
        if (!description.isEmpty()) {
            byte[] text = description.getBytes(StandardCharsets.UTF_8);
            out.accept(reply(code, NbdWire.REP_INFO, 2 + text.length).putShort((short) NbdWire.INFO_DESCRIPTION).put(text).flip());
        }
        out.accept(reply(code, NbdWire.REP_ACK, 0).flip());
        if (code == NbdWire.OPT_INFO) return Next.CONTINUE;
        chosen = export;
        return Next.TRANSMIT;
    }

    /*  LIST_META_CONTEXT / SET_META_CONTEXT data
     *  | name length u32 | name | query count u32 | count × (query length u32 | query) |
     */
    private void metaContext(int code, byte[] data, Consumer<ByteBuffer> out) {
        boolean set = code == NbdWire.OPT_SET_META_CONTEXT;
        if (set) {
            // SET replaces the selection even when it fails.
            baseAllocationSelected = false;
            metaExportName = null;
        }
        if (!structuredReplies) {
            invalid(code, out, "metadata contexts need structured replies first");
            return;
        }
        ByteBuffer in = ByteBuffer.wrap(data);
        if (in.remaining() < 4) {
            invalid(code, out, "data of " + data.length + " bytes (expected: at least 8)");
            return;
        }
        long nameLength = Integer.toUnsignedLong(in.getInt());
        if (nameLength > in.remaining() - 4 || nameLength > NbdWire.MAX_STRING) {
            invalid(code, out, "name length " + nameLength + " overruns the option");
            return;
        }
        String name = string(in, (int) nameLength);
        long queries = Integer.toUnsignedLong(in.getInt());
        boolean matchBase = !set && queries == 0;
        for (long i = 0; i < queries; i++) {
            if (in.remaining() < 4) {
                invalid(code, out, "query " + i + " of " + queries + " overruns the option");
                return;
            }
            long length = Integer.toUnsignedLong(in.getInt());
            if (length > in.remaining() || length > NbdWire.MAX_STRING) {
                invalid(code, out, "query " + i + " of length " + length + " overruns the option");
                return;
            }
            String query = string(in, (int) length);
            // "base:" lists every base context; in SET it is ignored. Other namespaces: not ours, ignored.
            if (query.equals(NbdWire.BASE_ALLOCATION) || (!set && query.equals("base:"))) matchBase = true;
        }
        if (in.hasRemaining()) {
            invalid(code, out, in.remaining() + " bytes after the last query");
            return;
        }
        Export export = exports.find(name);
        if (export == null || !export.admits(client)) {
            out.accept(error(code, NbdWire.REP_ERR_UNKNOWN, "no export named '" + name + "'"));
            return;
        }
        if (matchBase) {
            byte[] context = NbdWire.BASE_ALLOCATION.getBytes(StandardCharsets.US_ASCII);
            out.accept(reply(code, NbdWire.REP_META_CONTEXT, 4 + context.length)
                    .putInt(set ? NbdWire.BASE_ALLOCATION_ID : 0).put(context).flip());
        }
        if (set) {
            baseAllocationSelected = matchBase;
            metaExportName = export.name();
        }
        out.accept(reply(code, NbdWire.REP_ACK, 0).flip());
    }

    private Next invalid(int code, Consumer<ByteBuffer> out, String message) {
        out.accept(error(code, NbdWire.REP_ERR_INVALID, message));
        return Next.CONTINUE;
    }

    private static String string(ByteBuffer in, int length) {
        String s = new String(in.array(), in.position(), length, StandardCharsets.UTF_8);
        in.position(in.position() + length);
        return s;
    }

    /** A reply buffer with its header written and room for {@code length} bytes of data. */
    private static ByteBuffer reply(int option, int type, int length) {
        return ByteBuffer.allocate(REPLY_HEADER_BYTES + length).putLong(NbdWire.OPTION_REPLY_MAGIC)
                .putInt(option).putInt(type).putInt(length);
    }

    private static ByteBuffer error(int option, int type, String message) {
        byte[] text = message.getBytes(StandardCharsets.UTF_8);
        return reply(option, type, text.length).put(text).flip();
    }
}
