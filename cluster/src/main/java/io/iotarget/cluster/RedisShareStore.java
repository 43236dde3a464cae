package io.iotarget.cluster;

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
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The store on Redis or Valkey, through Lettuce: one Lua script ({@code rebalance.lua}) does a
 * node's whole exchange atomically, with the store's own clock for leases. The client has two
 * IO threads and two computation threads (Lettuce's least), fails a command at once while disconnected (the
 * coordinator then keeps its shares until the lease runs out), reconnects by itself, and gives
 * every command at most {@code timeout}. The coordinator's thread only.
 */
public final class RedisShareStore implements ShareStore {
    private static final String SCRIPT = script();

    static {
        // Once, before any Lettuce class makes its logger: Netty would log Lettuce's lines through
        // SLF4J (bound to JUL) and name its own wrapper as their source.
        io.netty.util.internal.logging.InternalLoggerFactory.setDefaultFactory(io.netty.util.internal.logging.JdkLoggerFactory.INSTANCE);
    }

    private final ClientResources resources;
    private final RedisClient client;
    private final String sha;
    private StatefulRedisConnection<String, String> connection;

    /**
     * @param uri     {@code redis://HOST:PORT} (Lettuce's URI syntax: {@code rediss://}, a password, a database)
     * @param timeout how long one command or connection attempt may take
     */
    public RedisShareStore(String uri, Duration timeout) {
        RedisURI redisUri = RedisURI.create(uri);
        redisUri.setTimeout(timeout);
        resources = DefaultClientResources.builder().ioThreadPoolSize(2).computationThreadPoolSize(2)
                .reconnectDelay(Delay.exponential(Duration.ofMillis(10), timeout, 2, java.util.concurrent.TimeUnit.MILLISECONDS))
                .build();
        client = RedisClient.create(resources, redisUri);
        client.setOptions(ClientOptions.builder().autoReconnect(true)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .socketOptions(SocketOptions.builder().connectTimeout(timeout).build())
                .timeoutOptions(TimeoutOptions.enabled(timeout)).build());
        sha = sha1(SCRIPT);
    }

    private static String script() {
        try (InputStream in = RedisShareStore.class.getResourceAsStream("rebalance.lua")) {
            if (in == null) throw new IllegalStateException("rebalance.lua is missing from the build");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Why {@code uri} names no Redis or Valkey server this store can use; null when it does. */
    public static String problem(String uri) {
        if (!uri.startsWith("redis://") && !uri.startsWith("rediss://")) return "another scheme";
        try {
            RedisURI parsed = RedisURI.create(uri);
            return parsed.getHost() == null || parsed.getHost().isEmpty() ? "no host" : null;
        } catch (RuntimeException e) {          // Lettuce's parser reports bad URIs as IllegalArgumentException, mostly
            return e.getMessage();
        }
    }

    /** The script's name for EVALSHA: its SHA-1 in lower-case hex. */
    private static String sha1(String text) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-1", e);
        }
    }

    @Override
    public List<Share> exchange(String node, int nodes, long leaseMs, List<Report> reports) throws StoreException {
        String[] keys = new String[reports.size()];
        String[] args = new String[3 + 4 * reports.size()];
        args[0] = node;
        args[1] = Integer.toString(nodes);
        args[2] = Long.toString(leaseMs);
        for (int i = 0; i < reports.size(); i++) {
            Report r = reports.get(i);
            keys[i] = r.key();
            args[3 + 4 * i] = Long.toString(r.limit());
            args[4 + 4 * i] = Long.toString(r.demand());
            args[5 + 4 * i] = Long.toString(r.held());
            args[6 + 4 * i] = Long.toString(r.floor());
        }
        try {
            RedisCommands<String, String> commands = commands();
            List<Object> answer;
            try {
                answer = commands.evalsha(sha, ScriptOutputType.MULTI, keys, args);
            } catch (RedisNoScriptException e) {
                answer = commands.eval(SCRIPT, ScriptOutputType.MULTI, keys, args);     // a new or restarted store caches it now
            }
            List<Share> shares = new ArrayList<>(answer.size());
            for (Object o : answer) {
                List<?> pair = (List<?>) o;
                shares.add(new Share((Long) pair.get(0), (Long) pair.get(1) == 1));
            }
            return shares;
        } catch (RedisException e) {
            throw new StoreException(e.getMessage(), e);
        }
    }

    /** The connection, made on first use and again when the store could not be reached at all; Lettuce reconnects a made one by itself. */
    private RedisCommands<String, String> commands() {
        if (connection == null) connection = client.connect();
        return connection.sync();
    }

    @Override
    public void close() {
        if (connection != null) connection.close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        resources.shutdown(0, 2, java.util.concurrent.TimeUnit.SECONDS);
    }
}
