package io.iotarget.control.http;

import io.iotarget.control.http.ControlEndpoint.Exchange;
import io.iotarget.control.http.ControlEndpoint.Reply;
import io.iotarget.model.Errno;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerExpectContinueHandler;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

/**
 * The control endpoint's connections on its event loop (section 5 of {@link ControlEndpoint}'s
 * doc): each is counted against the caps ({@link ConnectionBudget}), has one deadline at a time,
 * speaks TLS when served, and has its requests gathered one at a time and answered on a virtual
 * thread each, in order. What a request means is the endpoint's: {@code answer}.
 */
final class HttpConnections {
    private static final System.Logger LOG = System.getLogger(ControlEndpoint.class.getName());

    private final SSLContext tls;
    /** What a request's headers show (the token, a session or nothing), which ranks its connection. */
    private final Function<HttpHeaders, ConnectionBudget.Shown> shows;
    /** The answer to a complete request; runs on the request's virtual thread. */
    private final Function<Exchange, Reply> answer;
    /** Complete requests, one virtual thread each. */
    private final ExecutorService requests = Executors.newVirtualThreadPerTaskExecutor();
    /** The event loop's only. */
    private final ConnectionBudget<Channel> budget = new ConnectionBudget<>(ControlEndpoint.MAX_CONNECTIONS, ControlEndpoint.MAX_CONNECTIONS_PER_PEER,
            ControlEndpoint.MAX_CONNECTIONS_PER_SESSION, ControlEndpoint.MAX_SESSION_CONNECTIONS, Channel::close);
    private final LongAdder refused = new LongAdder();
    private final LongAdder timedOut = new LongAdder();

    HttpConnections(SSLContext tls, Function<HttpHeaders, ConnectionBudget.Shown> shows, Function<Exchange, Reply> answer) {
        this.tls = tls;
        this.shows = shows;
        this.answer = answer;
    }

    /** On the event loop. */
    ControlEndpoint.Load load() {
        return new ControlEndpoint.Load(budget.total(), budget.unproven(), budget.sessionConnections(), refused.sum(), budget.evicted(), timedOut.sum());
    }

    /** Ends the requests in service (the loop has closed every connection). */
    void close() {
        requests.shutdownNow();
    }

    /** A new connection: counted against the caps, its deadlines, TLS if served, HTTP. */
    void open(SocketChannel channel) {
        if (!budget.admit(channel, channel.remoteAddress().getAddress())) {
            refused.increment();
            channel.close();
            return;
        }
        channel.closeFuture().addListener(f -> budget.release(channel));
        Deadlines deadlines = new Deadlines(channel);
        if (tls != null) {
            SSLEngine engine = tls.createSSLEngine();
            engine.setUseClientMode(false);
            channel.pipeline().addLast(new SslHandler(engine, requests));
        }
        channel.pipeline().addLast(deadlines.bytes, new HttpServerCodec(ControlEndpoint.MAX_LINE_BYTES, ControlEndpoint.MAX_HEADER_BYTES, 8 * 1024),
                                   new HttpServerExpectContinueHandler(), deadlines.messages, new Requests(channel, deadlines));
    }

    /**
     * Sees what Netty's acceptor passes on when accept(2) fails — out of descriptors (EMFILE) or
     * memory: the acceptor has stopped accepting for a second (the client waits in the backlog),
     * so the loop neither spins nor stops. Logged once a minute at most; logging may need a
     * descriptor itself (the first log line loads the time zones), and a failure to log must not
     * end the loop, which would end the endpoint. Owner: the event loop.
     */
    ChannelInboundHandlerAdapter acceptFailures() {
        return new AcceptFailures();
    }

    private final class AcceptFailures extends ChannelInboundHandlerAdapter {
        private long lastLogNs;
        private boolean logged;

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            long now = System.nanoTime();
            if (logged && now - lastLogNs < TimeUnit.MINUTES.toNanos(1)) return;
            logged = true;
            lastLogNs = now;
            try {
                LOG.log(System.Logger.Level.WARNING, "control endpoint: accept failed (" + cause + "); accepting again in a second");
            } catch (Throwable unlogged) {
                // nothing more to do: the acceptor retries either way
            }
        }
    }

    /**
     * The one deadline a connection has at a time: the request's head, its body, the idle time
     * before the next request, or the client taking the response. Owner: the event loop.
     */
    private final class Deadlines {
        private final Channel channel;
        private ScheduledFuture<?> timer;
        /** Waiting for the first byte of a kept-alive connection's next request. */
        private boolean idle;
        /** Sees bytes before the codec: the first byte after idling starts the head's deadline. */
        final ChannelInboundHandlerAdapter bytes = new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                if (idle) {
                    idle = false;
                    arm(ControlEndpoint.HEAD_TIMEOUT_NS);
                }
                ctx.fireChannelRead(msg);
            }
        };
        /** Sees the codec's messages: the head is in, then the body is. */
        final ChannelInboundHandlerAdapter messages = new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                if (msg instanceof LastHttpContent) disarm();
                else if (msg instanceof HttpRequest) arm(ControlEndpoint.BODY_TIMEOUT_NS);
                ctx.fireChannelRead(msg);
            }
        };

        Deadlines(Channel channel) {
            this.channel = channel;
            arm(ControlEndpoint.HEAD_TIMEOUT_NS);
        }

        void arm(long ns) {
            disarm();
            timer = channel.eventLoop().schedule(() -> {
                timedOut.increment();
                channel.close();
            }, ns, TimeUnit.NANOSECONDS);
        }

        void disarm() {
            if (timer != null) timer.cancel(false);
            timer = null;
        }

        /**
         * A response went out on a connection that stays: wait for the next request, the idle
         * timeout if the connection has shown the token or a session, else the head's deadline
         * (it may have sent part of the next request already, which the codec holds).
         */
        void keepAlive() {
            idle = budget.proven(channel);
            arm(idle ? ControlEndpoint.IDLE_TIMEOUT_NS : ControlEndpoint.HEAD_TIMEOUT_NS);
            channel.config().setAutoRead(true);
        }
    }

    /**
     * Gathers one request at a time (head and body) and hands it to a virtual thread; reads
     * nothing more meanwhile. Requests the client sent ahead (pipelined, in the same read) wait
     * here in order. A client that half-closes after its requests still gets their answers.
     */
    private final class Requests extends ChannelInboundHandlerAdapter {
        private final Channel channel;
        private final Deadlines deadlines;
        /** Decoded messages that came while a request was in service, in order. */
        private final ArrayDeque<Object> waiting = new ArrayDeque<>();
        private HttpRequest head;
        private ByteArrayOutputStream body;
        /** A request is on a virtual thread, or the connection is being refused: take no other. */
        private boolean busy;
        /** The client sent FIN: answer what is in service and close. */
        private boolean inputClosed;

        Requests(Channel channel, Deadlines deadlines) {
            this.channel = channel;
            this.deadlines = deadlines;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (busy) waiting.add(msg);
            else take(msg);
        }

        private void take(Object msg) {
            try {
                if (msg instanceof HttpRequest r) {
                    if (r.decoderResult().isFailure()) {
                        refuse(malformed(r.decoderResult().cause()));
                        return;
                    }
                    if (HttpUtil.getContentLength(r, 0L) > ControlEndpoint.MAX_VALUE_BYTES) {
                        refuse(tooLong());
                        return;
                    }
                    head = r;
                    body = new ByteArrayOutputStream();
                }
                if (msg instanceof HttpContent c && head != null) {
                    if (c.decoderResult().isFailure()) {
                        refuse(malformed(c.decoderResult().cause()));
                        return;
                    }
                    if (body.size() + c.content().readableBytes() > ControlEndpoint.MAX_VALUE_BYTES) {
                        refuse(tooLong());
                        return;
                    }
                    c.content().readBytes(body, c.content().readableBytes());
                    if (c instanceof LastHttpContent) dispatch();
                }
            } catch (IOException e) {
                throw new IllegalStateException("a byte array stream does not fail", e);
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        private void dispatch() {
            HttpRequest r = head;
            head = null;
            busy = true;
            channel.config().setAutoRead(false);
            URI uri;
            try {
                uri = new URI(r.uri());
            } catch (URISyntaxException e) {
                refuse(new Reply(400, "bad request target: " + e.getMessage() + "\n", Errno.EINVAL));
                return;
            }
            budget.request(channel, shows.apply(r.headers()));
            Exchange ex = new Exchange(r.method().name(), uri, r.headers(), body.toByteArray(), channel, HttpUtil.isKeepAlive(r));
            body = null;
            requests.execute(() -> handle(ex, this));
        }

        /** The response went out ({@code sent}) or not: the next waiting request, else wait for one, else close. On the loop. */
        void done(boolean sent, boolean keepAlive) {
            busy = false;
            if (!sent || !keepAlive) {
                channel.close();
                return;
            }
            for (Object next; !busy && (next = waiting.poll()) != null; ) take(next);
            if (busy) return;
            if (inputClosed) channel.close();
            else deadlines.keepAlive();
        }

        /** Answers and hangs up: the stream cannot be trusted to be in step any more. */
        private void refuse(Reply reply) {
            head = null;
            body = null;
            busy = true;
            channel.config().setAutoRead(false);
            deadlines.arm(ControlEndpoint.SEND_TIMEOUT_NS);
            channel.writeAndFlush(response(reply, new DefaultHttpHeaders(), false)).addListener(f -> channel.close());
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
            if (event instanceof ChannelInputShutdownEvent) {
                inputClosed = true;
                if (!busy) channel.close();
            }
            ctx.fireUserEventTriggered(event);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            for (Object m; (m = waiting.poll()) != null; ) ReferenceCountUtil.release(m);
            ctx.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            channel.close();                            // a reset, a TLS failure: the peer's doing, nothing to answer
        }
    }

    private static Reply malformed(Throwable cause) {
        if (cause instanceof TooLongHttpLineException) return new Reply(414, "the request line is longer than " + ControlEndpoint.MAX_LINE_BYTES + " bytes\n", Errno.EINVAL);
        if (cause instanceof TooLongHttpHeaderException) return new Reply(431, "the headers are longer than " + ControlEndpoint.MAX_HEADER_BYTES + " bytes\n", Errno.EINVAL);
        String why = cause instanceof TooLongFrameException ? "too long" : String.valueOf(cause.getMessage());
        return new Reply(400, "malformed request: " + why + "\n", Errno.EINVAL);
    }

    private static Reply tooLong() {
        return new Reply(413, Errno.EINVAL.message() + " (EINVAL): a value may be at most " + ControlEndpoint.MAX_VALUE_BYTES + " bytes\n", Errno.EINVAL);
    }

    private void handle(Exchange ex, Requests connection) {
        Reply reply = answer.apply(ex);
        Channel channel = ex.channel();
        if (reply == ControlEndpoint.STREAMED) {
            channel.eventLoop().execute(() -> connection.done(false, false));
            return;
        }
        FullHttpResponse response = response(reply, ex.out(), ex.keepAlive());
        channel.eventLoop().execute(() -> {
            connection.deadlines.arm(ControlEndpoint.SEND_TIMEOUT_NS);
            channel.writeAndFlush(response).addListener(f -> connection.done(f.isSuccess(), ex.keepAlive()));
        });
    }

    static FullHttpResponse response(Reply reply, HttpHeaders headers, boolean keepAlive) {
        ByteBuf content = reply.body() == null ? Unpooled.EMPTY_BUFFER : Unpooled.copiedBuffer(reply.body(), StandardCharsets.UTF_8);
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(reply.status()), content);
        response.headers().set(headers);
        if (reply.errno() != null) response.headers().set(ControlEndpoint.ERRNO_HEADER, reply.errno().name());
        if (content.isReadable()) response.headers().set(HttpHeaderNames.CONTENT_TYPE, reply.contentType());
        HttpUtil.setContentLength(response, content.readableBytes());
        HttpUtil.setKeepAlive(response, keepAlive);
        return response;
    }
}
