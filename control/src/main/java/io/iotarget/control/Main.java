package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import io.iotarget.control.config.ConfigLoader;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.control.config.StateFile;
import io.iotarget.control.http.ControlClient;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.control.http.ControlToken;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.ConnectException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/**
 * The one launcher, {@code bin/iotarget}:
 * <pre>
 *  iotarget serve [--config FILE]          run the target in the foreground
 *  iotarget read PATH                      cat a file (tenants/a/io.stat, io.cost.qos, /nvmet/...)
 *  iotarget write PATH VALUE               echo VALUE &gt; PATH
 *  iotarget mkdir PATH | rmdir PATH        groups, backends, exports, subsystems...
 *  iotarget ls [-l] [PATH]                 list a directory; -l: limits and live rates of groups, values of attributes
 *  iotarget ln TARGET LINK | unlink LINK   configfs-style links (ports/1/subsystems/NQN)
 *  iotarget devices                        name, MAJ:MIN, size of every backend
 *  iotarget save [FILE]                    the whole configuration as serve --config takes it
 *  iotarget top                            every group's IOPS, bandwidth, latency, held time per device, live
 *  iotarget watch PATH TRIGGER             wait until an io.pressure trigger fires
 *  iotarget calibrate DEVICE [--seconds N] [--force] [--apply]   measure io.cost.model and a suggested io.cost.qos
 *  iotarget web                            a one-time address that opens the live web view in a browser
 *  iotarget batch [-e]                     the commands of stdin's lines, over one connection ({@link Batch})
 *  iotarget help [COMMAND]                 the commands, or one command's usage and examples
 * </pre>
 * Client commands talk to the control endpoint ({@code --control HOST:PORT}, or
 * {@code $IOTARGET_CONTROL}, default 127.0.0.1:9809) with the token its server wrote for this
 * user ({@link ControlToken}; {@code --token-file} for another machine's). A refused operation
 * prints the kernel-style error on stderr and exits 1 (a missing or wrong token too); usage
 * errors exit 2; no server exits 3.
 */
public final class Main {
    /** One client or server command: how it is called, one line for the list, and what {@code help COMMAND} adds. */
    private record Command(String name, String synopsis, String summary, String detail) {
    }

    private static final List<Command> COMMANDS = List.of(
            new Command("serve", "serve [--config FILE]", "run the target in the foreground", """
                    Builds everything FILE describes (JSON, docs/config.md; without it the embedded
                    default: one 1 GiB memory backend served over NBD and NVMe/TCP on loopback) and
                    serves until stopped. The control endpoint writes its token file for this user;
                    Prometheus scrapes /metrics with it (docs/metrics.md).
                    """),
            new Command("read", "read PATH", "print a file, e.g. tenants/a/io.stat or /nvmet/ports/1/addr_traddr", """
                    Prints the file as cat would. Group files: io.stat, io.max, io.weight,
                    cgroup.subtree_control, ...; /backends, /nbd and /nvmet hold the rest.
                      iotarget read tenants/a/io.stat
                      iotarget read /nbd/exports/a/cgroup
                    """),
            new Command("write", "write PATH VALUE", "write VALUE to a file, e.g. write tenants/a/io.max \"259:0 riops=20000\"", """
                    One write(2) of VALUE (the remaining arguments joined by spaces), parsed as Linux
                    parses it; a refusal prints the kernel's errno and changes nothing.
                      iotarget write tenants/cgroup.subtree_control +io
                      iotarget write tenants/a/io.max "259:0 riops=20000 wbps=104857600"
                      iotarget write tenants/a/io.weight 200
                      iotarget write io.cost.qos "259:0 enable=1"
                    """),
            new Command("mkdir", "mkdir PATH", "create a group, backend, export, subsystem, namespace, port...", """
                    As mkdir(2) in cgroupfs or nvmet's configfs; the new directory's attributes start
                    at their defaults.
                      iotarget mkdir tenants/a
                      iotarget mkdir /nbd/exports/a
                      iotarget mkdir /nvmet/subsystems/nqn.2026-11.io.iotarget:a/namespaces/1
                    """),
            new Command("rmdir", "rmdir PATH", "remove one", """
                    As rmdir(2). A group that still has child groups, or exports or namespaces bound
                    to it, is refused with EBUSY.
                      iotarget rmdir tenants/a
                    """),
            new Command("ls", "ls [-l] [PATH]", "list a directory (default: the root group); -l with limits and live rates", """
                    Lists a directory; subdirectories end with '/'. / lists the mounted trees.
                    With -l, a group shows one line per device of itself and each child group: IOPS
                    and bandwidth (bytes per second) measured over one second from io.stat, the
                    io.weight on that device and the io.max limits that are not max. Any other
                    directory shows each attribute with its value.
                      iotarget ls -l tenants
                      iotarget ls -l /nbd/exports/a
                    """),
            new Command("ln", "ln TARGET LINK", "link, e.g. ln /nvmet/subsystems/NQN /nvmet/ports/1/subsystems/NQN", """
                    A configfs-style symbolic link: a subsystem into a port, a host into a
                    subsystem's allowed_hosts.
                      iotarget ln /nvmet/hosts/HOSTNQN /nvmet/subsystems/NQN/allowed_hosts/HOSTNQN
                    """),
            new Command("unlink", "unlink LINK", "remove a link", """
                    Removes a link made with ln.
                    """),
            new Command("devices", "devices", "list backends: name, MAJ:MIN, size, type, users", """
                    The device table: each backend's name, device number (MAJ:MIN, the key of io.max
                    and io.weight lines), size in bytes, type, and how many exports and namespaces
                    use it.
                    """),
            new Command("save", "save [FILE]", "the whole live configuration as the JSON serve --config takes", """
                    Prints the configuration (backends, groups with their io.* settings, exports,
                    nvmet subsystems, namespaces, ports, hosts and links) as serve --config reads
                    it, or replaces FILE atomically (mode 0600: it holds secrets). Restarting from
                    it and saving again gives the same bytes (docs/config.md).
                      iotarget save target.json
                      iotarget serve --config target.json
                    """),
            new Command("top", "top", "every group's IOPS, bandwidth, latency and held time per device, redrawn each second", """
                    A live view like iotop: one line per group and device, redrawn each second:
                    read and write IOPS and bandwidth (bytes per second) from io.stat, as ls -l
                    measures them; from iotarget.io.stat, the average and p99 latency of the
                    requests completed in the second (from entering the server to completion) and
                    the time requests waited in io.max (MAXHELD) and iocost (COSTHELD) per second
                    (2.0s: two requests waited all along); MIN: io.min met, or the share of it
                    given while minimums overcommit the device (71%), - when none was used;
                    BURST, the io.max.burst credit left (io.max.burst.stat, "-" without a burst
                    in effect); HOST, a host's group under cgroup_per_host: auto while a connect
                    made it and nobody used it (removed once idle if too many such are), kept
                    after (iotarget.host), - for other groups. Keys: r w R W l p m c sort by RIOPS,
                    WIOPS, RBPS, WBPS, AVGLAT, P99LAT, MAXHELD, COSTHELD (largest first), g by
                    group; q (or Ctrl-C, or the end of input) quits and gives the terminal back.
                      iotarget top
                    """),
            new Command("watch", "watch PATH TRIGGER", "wait until an io.pressure trigger fires, e.g. watch tenants/a/io.pressure \"some 150000 1000000\"", """
                    Keeps TRIGGER (the remaining arguments joined by spaces) on the io.pressure file
                    at PATH, as a program that writes it and polls for POLLPRI does, and returns when
                    it fires, printing one line, with exit 0. TRIGGER is "some|full STALL WINDOW":
                    fire when the group's queues were stalled (some: any of them; full: all that
                    have work) for STALL microseconds within the last WINDOW microseconds
                    (500000..10000000, STALL 1..WINDOW), at most once per window. A refused trigger
                    prints the kernel's errno (EINVAL) and exits 1, and so does the group's removal
                    while it waits (ENODEV). Ctrl-C removes the trigger.
                      iotarget watch tenants/a/io.pressure "some 150000 1000000"
                      iotarget watch io.pressure "full 500000 2000000"
                    """),
            new Command("calibrate", "calibrate DEVICE [--seconds N] [--force] [--apply]",
                        "measure a device's io.cost.model and a suggested io.cost.qos", """
                    Measures DEVICE (a backend's name or MAJ:MIN) as tools/cgroup/iocost_coef_gen.py
                    does: sequential 1 MiB reads (rbps), sequential and random 4 KiB reads
                    (rseqiops, rrandiops), then the same writes, each run N seconds (default 3, so
                    about 18 s) at the device's queue_depth, which saturates it. The IO runs inside
                    the server, straight on the device: no tenant is charged and no policy holds it.
                    Writes put back the bytes they just read, so the contents do not change. Prints
                    the progress on stderr, then two lines on stdout: the io.cost.model line and a
                    suggested io.cost.qos line (enable=1, rpct/wpct 95 with rlat/wlat the p99
                    latency of random reads and writes at that depth). --apply writes both.
                    A device a tenant sent IO to in the last 10 s is in use: refused (EBUSY), and a
                    calibration stops if tenant IO arrives, unless --force. Ctrl-C stops it.
                      iotarget calibrate default
                      iotarget calibrate 259:0 --seconds 10 --apply
                    """),
            new Command("web", "web", "print a one-time address that logs a browser into the live web view", """
                    Asks the server for a login code and prints the address to open, e.g.
                    http://127.0.0.1:9809/login?code=...; it works once, within 2 minutes. The
                    browser then keeps a session cookie (HttpOnly, SameSite=Strict, 12 hours, until
                    the server stops) and is sent to / without the code: the group tree with live
                    IOPS, bandwidth, latency and throttling charts, each group's io.max, io.weight
                    and io.latency, the devices and their exports and namespaces. The page only
                    reads; it sees /metrics and the group tree, not the NBD and nvmet trees.
                    Through ssh, forward the port first (ssh -L 9809:127.0.0.1:9809 HOST).
                      iotarget web
                    """),
            new Command("batch", "batch [-e]", "run commands read from stdin, one a line, over one connection (also: iotarget -)", """
                    Reads client commands from standard input, one a line, as they would follow
                    "iotarget" on a command line, and runs them in order over one connection: one
                    start-up and one proof of the server for the whole script. Words split as a
                    shell splits them, without expansion ('...', "...", backslash); # starts a
                    comment; blank lines are skipped. A failing line's error names its line
                    (iotarget: line 3: ...) and the next lines still run, unless -e: then the batch
                    stops there, as sh -e does. It also stops when the server cannot be reached.
                    Exit status: the first failing line's (1 refused, 2 usage, 3 no server), else 0.
                    top and serve cannot run in a batch.
                      printf '%s\\n' 'mkdir tenants/a' 'write tenants/a/io.max "259:0 riops=1000"' | iotarget batch
                      iotarget batch -e < setup.txt
                    """),
            new Command("help", "help [COMMAND]", "this list, or one command's usage and examples", """
                    Without COMMAND, lists the commands; with it, that command's usage.
                    """));

    private static final String USAGE = usage();

    private static String usage() {
        StringBuilder sb = new StringBuilder("""
                usage: iotarget serve [--config FILE]
                       iotarget [--control [https://]HOST:PORT] [--token-file FILE] [--cacert PEM] COMMAND
                commands:
                """);
        for (Command c : COMMANDS) {
            if (!c.name.equals("serve")) sb.append(String.format("  %-22s %s%n", c.synopsis, c.summary));
        }
        sb.append("""
                Paths without a leading '/' are groups and their files (like /sys/fs/cgroup);
                /backends, /nbd and /nvmet hold the rest. iotarget help COMMAND tells more.
                The CLI sends the token its server wrote for this user (~/.local/state/iotarget,
                or $IOTARGET_RUNTIME_DIR); --token-file and --cacert reach a TLS endpoint elsewhere.
                """);
        return sb.toString();
    }

    /** {@code help} alone: the usage; {@code help COMMAND}: its synopsis and detail. Exit 2 for an unknown command. */
    private static int help(List<String> rest, PrintStream out, PrintStream err) {
        if (rest.isEmpty()) {
            out.print(USAGE);
            return 0;
        }
        for (Command c : COMMANDS) {
            if (c.name.equals(rest.get(0)) && rest.size() == 1) {
                out.print("usage: iotarget " + c.synopsis + "\n" + c.summary + "\n\n" + c.detail);
                return 0;
            }
        }
        err.println("iotarget: help " + String.join(" ", rest) + ": no such command (commands: "
                    + String.join(", ", COMMANDS.stream().map(Command::name).toList()) + ")");
        return 2;
    }

    private static void tellServiceManager(Map<String, String> env, String state, PrintStream err) {
        String failure = ServiceManager.notify(env, state);
        if (failure != null) err.println("iotarget: warning: the service manager was not told " + state.lines().findFirst().orElse("") + ": " + failure);
    }

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.getenv(), System.out, System.err));
    }

    /** Runs one command as {@code bin/iotarget} would with this environment; returns the exit status. */
    static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        return run(args, env, System.in, out, err);
    }

    /** {@link #run(String[], Map, PrintStream, PrintStream)} with {@code in} as standard input (read by {@code batch}). */
    static int run(String[] args, Map<String, String> env, InputStream in, PrintStream out, PrintStream err) {
        List<String> a = Arrays.asList(args);
        String control = env.getOrDefault("IOTARGET_CONTROL", ControlEndpoint.DEFAULT_HOST_PORT);
        Path tokenFile = null;
        Path caFile = null;
        while (a.size() >= 2 && List.of("--control", "--token-file", "--cacert").contains(a.get(0))) {
            switch (a.get(0)) {
                case "--control" -> control = a.get(1);
                case "--token-file" -> tokenFile = Path.of(a.get(1));
                default -> caFile = Path.of(a.get(1));
            }
            a = a.subList(2, a.size());
        }
        if (a.isEmpty()) {
            err.print(USAGE);
            return 2;
        }
        String command = a.get(0);
        List<String> rest = a.subList(1, a.size());
        if (command.equals("help") || command.equals("-h") || command.equals("--help")) return help(rest, out, err);
        if (command.equals("serve")) return serve(rest, env, out, err);
        boolean batch = command.equals("batch") || command.equals("-");
        if (batch && !(rest.isEmpty() || rest.equals(List.of("-e")))) {
            err.print("usage: iotarget batch [-e]   (iotarget help batch tells more)\n");
            return 2;
        }
        // Closed at the end: the CLI runs in-process in tests and tools, where an open connection
        // would stay proven on the server until its idle timeout.
        try (ControlClient client = ControlClient.connect(control, tokenFile, ControlToken.directory(env), caFile)) {
            String endpoint = control;
            if (batch) return Batch.run(in, !rest.isEmpty(), (line, words) -> !words.get(0).equals("help")
                    ? command(client, endpoint, words, out, err, "iotarget: line " + line + ": ")
                    : help(words.subList(1, words.size()), out, err), err);
            return command(client, control, a, out, err, "iotarget: ");
        } catch (ControlClient.TargetException e) {
            err.println("iotarget: " + e.getMessage());
            return 2;
        } catch (IOException e) {
            err.println("iotarget: " + control + ": " + e.getMessage());
            return 3;
        }
    }

    /**
     * One client command ({@code a}: the name and its arguments) through {@code client}; its
     * errors go to {@code err} after {@code prefix}. Returns the exit status: 0, 1 refused, 2
     * usage, 3 no server.
     */
    private static int command(ControlClient client, String control, List<String> a, PrintStream out, PrintStream err, String prefix) {
        String command = a.get(0);
        List<String> rest = a.subList(1, a.size());
        try {
            ControlClient.Reply reply = switch (command) {
                case "read" -> client.get("read", one(rest, "read PATH"));
                case "ls" -> {
                    boolean details = !rest.isEmpty() && rest.get(0).equals("-l");
                    List<String> paths = details ? rest.subList(1, rest.size()) : rest;
                    if (paths.size() > 1) throw new UsageException("ls [-l] [PATH]");
                    String path = paths.isEmpty() ? "" : paths.get(0);
                    yield client.get(details ? "list-long" : "list", path);           // -l: the server's text (LongListing)
                }
                case "devices" -> client.get("devices", null);
                case "top" -> {
                    if (!rest.isEmpty() || !prefix.equals("iotarget: ")) throw new UsageException("top   (not in a batch: it reads its keys from stdin)");
                    yield new Top(client, LongListing.INTERVAL).run(out);
                }
                case "web" -> {
                    if (!rest.isEmpty()) throw new UsageException("web");
                    yield client.post("web-login", null, null, null);         // the server's line, with the address as we named it
                }
                case "save" -> {
                    if (rest.size() > 1) throw new UsageException("save [FILE]");
                    yield client.get("save", null);
                }
                case "write" -> {
                    if (rest.size() < 2) throw new UsageException("write PATH VALUE");
                    yield client.post("write", rest.get(0), null, String.join(" ", rest.subList(1, rest.size())));
                }
                case "watch" -> {
                    if (rest.size() < 2) throw new UsageException("watch PATH TRIGGER");
                    yield client.watch(rest.get(0), String.join(" ", rest.subList(1, rest.size())));
                }
                case "calibrate" -> calibrate(client, rest, err);
                case "mkdir", "rmdir", "unlink" -> client.post(command, one(rest, command + " PATH"), null, null);
                case "ln" -> {
                    if (rest.size() != 2) throw new UsageException("ln TARGET LINK");
                    yield client.post("link", rest.get(1), rest.get(0), null);
                }
                default -> throw new UsageException(null);
            };
            if (reply.ok() && command.equals("save") && !rest.isEmpty()) return saveTo(rest.get(0), reply.body(), err, prefix);
            if (reply.ok()) {
                out.print(reply.body());
                out.flush();
                return 0;
            }
            String what = rest.isEmpty() ? command : command + " " + (command.equals("ls") ? String.join(" ", rest) : rest.get(0));
            err.print(prefix + what + ": " + reply.body());
            return 1;
        } catch (UsageException e) {
            err.print(e.getMessage() == null ? prefix + "unknown command '" + command + "'\n" + (prefix.equals("iotarget: ") ? USAGE : "")
                    : (prefix.equals("iotarget: ") ? "" : prefix) + "usage: iotarget " + e.getMessage() + "   (iotarget help " + command + " tells more)\n");
            return 2;
        } catch (ConnectException e) {
            err.println(prefix + "no server at " + control + " (start one with: bin/iotarget serve)");
            return 3;
        } catch (IOException e) {
            err.println(prefix + control + ": " + e.getMessage());
            return 3;
        }
    }

    /** {@code calibrate DEVICE [--seconds N] [--force] [--apply]}: progress on {@code err}; with --apply, the two lines written. */
    private static ControlClient.Reply calibrate(ControlClient client, List<String> args, PrintStream err) throws IOException, UsageException {
        String usage = "calibrate DEVICE [--seconds N] [--force] [--apply]";
        String device = null;
        StringBuilder options = new StringBuilder();
        boolean apply = false;
        for (int i = 0; i < args.size(); i++) {
            switch (args.get(i)) {
                case "--apply" -> apply = true;
                case "--force" -> options.append(" force=1");
                case "--seconds" -> {
                    if (++i == args.size()) throw new UsageException(usage);
                    options.append(" seconds=").append(args.get(i));
                }
                default -> {
                    if (device != null || args.get(i).startsWith("-")) throw new UsageException(usage);
                    device = args.get(i);
                }
            }
        }
        if (device == null) throw new UsageException(usage);
        ControlClient.Reply result = client.calibrate(device, options.toString().strip(), line -> {
            err.print(line);
            err.flush();
        });
        if (!result.ok() || !apply) return result;
        String[] lines = result.body().split("\n");
        for (int i = 0; i < 2; i++) {
            String file = i == 0 ? "io.cost.model" : "io.cost.qos";
            ControlClient.Reply written = client.post("write", file, null, lines[i]);
            if (!written.ok()) return new ControlClient.Reply(written.status(), "writing " + file + ": " + written.body(), written.errno());
            err.println("wrote " + file);
        }
        return result;
    }

    /** {@code save FILE}: the file replaced atomically, 0600 (it holds DH-HMAC-CHAP keys). */
    private static int saveTo(String file, String json, PrintStream err, String prefix) {
        try {
            new StateFile(Path.of(file)).write(json);
            return 0;
        } catch (IOException | java.nio.file.InvalidPathException e) {
            err.println(prefix + "save " + file + ": cannot write it: " + e.getMessage());
            return 1;
        }
    }

    private static String one(List<String> rest, String usage) throws UsageException {
        if (rest.size() != 1) throw new UsageException(usage);
        return rest.get(0);
    }

    private static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String usage) {
            super(usage);
        }
    }

    /**
     * {@code server.warm_up_ms} of the data path ({@link WarmUp}), before anything of the server
     * exists: nothing listens until it ends. One that fails is reported and the server starts cold.
     */
    private static void warmUp(ConfigLoader.ServerSettings settings, PrintStream out, PrintStream err) {
        if (settings.warmUpMs() == 0) return;
        long startNs = System.nanoTime();
        try {
            long requests = WarmUp.run(settings.warmUpMs(), settings.engine(), settings.transport());
            out.println("iotarget: warmed up the data path: " + requests + " requests in " + (System.nanoTime() - startNs) / 1_000_000 + " ms");
        } catch (IOException | java.io.UncheckedIOException e) {
            err.println("iotarget: warm-up failed (the server starts cold): " + e.getMessage());
        }
    }

    private static int serve(List<String> args, Map<String, String> env, PrintStream out, PrintStream err) {
        Path config = null;
        if (args.size() == 2 && args.get(0).equals("--config")) {
            config = Path.of(args.get(1));
        } else if (!args.isEmpty()) {
            err.println("usage: iotarget serve [--config FILE]");
            return 2;
        }
        Server server;
        try {
            JsonNode json = config == null ? Server.defaultConfig() : ConfigLoader.parse(config);
            warmUp(ConfigLoader.serverSettings(json), out, err);
            server = Server.start(json, ControlToken.directory(env));
        } catch (ConfigException e) {
            err.println("iotarget: config " + (config == null ? "(embedded default)" : config) + ": " + e.getMessage());
            return 1;
        } catch (IOException e) {
            err.println("iotarget: cannot start: " + e.getMessage());
            return 1;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // SIGTERM (systemctl stop): connections answer what they accepted, backends flush, then exit.
            tellServiceManager(env, "STOPPING=1\nSTATUS=draining connections and flushing backends", err);
            server.close();
            stopped.countDown();
        }, "iotarget-shutdown"));
        String serving = "serving (" + (config == null ? "embedded default config" : config) + ")";
        out.println("iotarget: " + serving);
        for (String line : server.summary()) out.println("  " + line);
        out.print(Server.deviceTable(server.engine()).indent(2));
        out.flush();
        tellServiceManager(env, "READY=1\nSTATUS=" + serving + "\nMAINPID=" + ProcessHandle.current().pid(), err);
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }
}
