package io.iotarget.frontend.nvmetcp.reservation;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Reservations in the cluster's Redis or Valkey (the config's {@code cluster.store}), shared by
 * every node that serves the namespace:
 *
 * <pre>
 *  iotarget:resv:&lt;nqn&gt;/&lt;nsid&gt;   string: the state ({@link ReservationState#encode}, version first)
 *  channel iotarget:resv          one message per change: node \n key \n version \n notices
 *                                 (notices: space-separated HOSTID:TYPE, host IDs in 32 hex digits)
 * </pre>
 *
 * A change is one Lua script ({@code replace.lua}): compare the version, set, publish. Every
 * node subscribes to the channel and hears the others' changes ({@link Listener}); its own are
 * skipped. The client fails a command at once while disconnected, reconnects (and
 * resubscribes) by itself, and gives every command at most {@code timeout} (a connection attempt
 * at least {@link #CONNECT_TIMEOUT}). Any thread.
 */
public final class RedisReservationStore implements ReservationStore {
    static final String KEY_PREFIX = "iotarget:resv:";
    static final String CHANNEL = "iotarget:resv";
    private static final String SCRIPT = script();
    /** At least this for a connection attempt: a JVM's first one loads Netty and may take longer than a command may. */
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(2);

    static {
        // As RedisShareStore: before any Lettuce class makes its logger, Netty's go to JUL directly.
        io.netty.util.internal.logging.InternalLoggerFactory.setDefaultFactory(io.netty.util.internal.logging.JdkLoggerFactory.INSTANCE);
    }

    private final String node;
    private final ClientResources resources;
    private final RedisClient client;
    private final String sha;
    /** Made on first use, and again while the store could not be reached at all; Lettuce reconnects a made one by itself. */
    private StatefulRedisConnection<String, String> connection;
    private StatefulRedisPubSubConnection<String, String> subscription;
    private Listener listener;

    /**
     * @param uri     {@code redis://HOST:PORT} (Lettuce's URI syntax)
     * @param node    this node's id ({@code cluster.node}), which its messages carry
     * @param timeout how long one command or connection attempt may take
     */
    public RedisReservationStore(String uri, String node, Duration timeout) {
        this.node = node;
        RedisURI redisUri = RedisURI.create(uri);
        redisUri.setTimeout(timeout);
        resources = DefaultClientResources.builder().ioThreadPoolSize(2).computationThreadPoolSize(2)
                .reconnectDelay(Delay.exponential(Duration.ofMillis(10), timeout, 2, TimeUnit.MILLISECONDS)).build();
        client = RedisClient.create(resources, redisUri);
        client.setOptions(ClientOptions.builder().autoReconnect(true)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .socketOptions(SocketOptions.builder().connectTimeout(timeout.compareTo(CONNECT_TIMEOUT) > 0 ? timeout : CONNECT_TIMEOUT).build())
                .timeoutOptions(TimeoutOptions.enabled(timeout)).build());
        sha = sha1(SCRIPT);
    }

    private static String script() {
        try (InputStream in = RedisReservationStore.class.getResourceAsStream("replace.lua")) {
            if (in == null) throw new IllegalStateException("replace.lua is missing from the build");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String sha1(String text) {
        try {
            return HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-1", e);
        }
    }

    /** The connection, and the subscription once a listener wants it. */
    private synchronized RedisCommands<String, String> commands() {
        if (connection == null) connection = client.connect();
        if (listener != null && subscription == null) subscribe();
        return connection.sync();
    }

    private void subscribe() {
        StatefulRedisPubSubConnection<String, String> s = client.connectPubSub();
        s.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void message(String channel, String message) {
                heard(message);
            }
        });
        s.sync().subscribe(CHANNEL);
        subscription = s;
    }

    /** A change message: another node's is passed on; this node's own, and anything malformed, are skipped. */
    private void heard(String message) {
        String[] parts = message.split("\n", -1);
        if (parts.length != 4 || parts[0].equals(node)) return;
        List<ReservationState.Notice> notices = new ArrayList<>();
        try {
            for (String n : parts[3].split(" ")) {
                if (n.length() < 34 || n.charAt(32) != ':') continue;
                notices.add(new ReservationState.Notice(HexFormat.fromHexDigitsToLong(n, 0, 16), HexFormat.fromHexDigitsToLong(n, 16, 32),
                                                        Integer.parseInt(n.substring(33))));
            }
            listener.changed(parts[1], Long.parseLong(parts[2]), notices, false);
        } catch (IllegalArgumentException e) {
            // Not one of ours: the next interval's re-read still sees any change.
        }
    }

    @Override
    public ReservationState read(String key) throws StoreException {
        try {
            String value = commands().get(KEY_PREFIX + key);
            return value == null ? ReservationState.EMPTY : ReservationState.decode(value);
        } catch (RedisException e) {
            throw new StoreException(e.getMessage(), e);
        } catch (IllegalArgumentException e) {
            throw new StoreException(KEY_PREFIX + key + " holds no reservation state: " + e.getMessage(), e);
        }
    }

    @Override
    public boolean replace(String key, ReservationState next, List<ReservationState.Notice> notices) throws StoreException {
        HexFormat hex = HexFormat.of();
        StringBuilder message = new StringBuilder(node).append('\n').append(key).append('\n').append(next.version()).append('\n');
        for (ReservationState.Notice n : notices) {
            message.append(hex.toHexDigits(n.hostHigh())).append(hex.toHexDigits(n.hostLow())).append(':').append(n.type()).append(' ');
        }
        String[] keys = {KEY_PREFIX + key};
        String[] args = {Long.toString(next.version() - 1), next.encode(), CHANNEL, message.toString()};
        try {
            RedisCommands<String, String> commands = commands();
            Long stored;
            try {
                stored = commands.evalsha(sha, ScriptOutputType.INTEGER, keys, args);
            } catch (RedisNoScriptException e) {
                stored = commands.eval(SCRIPT, ScriptOutputType.INTEGER, keys, args);    // a new or restarted store caches it now
            }
            return stored == 1;
        } catch (RedisException e) {
            throw new StoreException(e.getMessage(), e);
        }
    }

    @Override
    public boolean shared() {
        return true;
    }

    /** The store outlives every node; whether it outlives its own restart is the store's configuration (docs/reservations.md). */
    @Override
    public boolean persistent() {
        return true;
    }

    /** Subscribes now if the store answers, else at the first command that reaches it. */
    @Override
    public void listen(Listener listener) {
        synchronized (this) {
            this.listener = listener;
        }
        try {
            commands();
        } catch (RedisException e) {
            // Subscribed later.
        }
    }

    @Override
    public synchronized void close() {
        if (subscription != null) subscription.close();
        if (connection != null) connection.close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        resources.shutdown(0, 2, TimeUnit.SECONDS);
    }
}
