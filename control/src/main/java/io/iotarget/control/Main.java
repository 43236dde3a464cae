package io.iotarget.control;

import io.iotarget.control.config.ConfigLoader;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.control.config.StateFile;
import io.iotarget.control.http.ControlClient;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.control.http.ControlToken;

import java.io.IOException;
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
 *  iotarget ls [PATH]                      list a directory
 *  iotarget ln TARGET LINK | unlink LINK   configfs-style links (ports/1/subsystems/NQN)
 *  iotarget devices                        name, MAJ:MIN, size of every backend
 *  iotarget save [FILE]                    the whole configuration as serve --config takes it
 * </pre>
 * Client commands talk to the control endpoint ({@code --control HOST:PORT}, or
 * {@code $IOTARGET_CONTROL}, default 127.0.0.1:9809) with the token its server wrote for this
 * user ({@link ControlToken}; {@code --token-file} for another machine's). A refused operation
 * prints the kernel-style error on stderr and exits 1 (a missing or wrong token too); usage
 * errors exit 2; no server exits 3.
 */
public final class Main {
    private static final String USAGE = """
            usage: iotarget serve [--config FILE]
                   iotarget [--control [https://]HOST:PORT] [--token-file FILE] [--cacert PEM] COMMAND
            commands:
              read PATH              print a file, e.g. tenants/a/io.stat or /nvmet/ports/1/addr_traddr
              write PATH VALUE       write VALUE to a file, e.g. write tenants/a/io.max "259:0 riops=20000"
              mkdir PATH             create a group, backend, export, subsystem, namespace, port...
              rmdir PATH             remove one
              ls [PATH]              list a directory (default: the root group)
              ln TARGET LINK         link, e.g. ln /nvmet/subsystems/NQN /nvmet/ports/1/subsystems/NQN
              unlink LINK            remove a link
              devices                list backends: name, MAJ:MIN, size, type, users
              save [FILE]            the whole live configuration as the JSON serve --config takes
                                     (stdout, or FILE replaced atomically, mode 0600: it holds secrets)
            Paths without a leading '/' are groups and their files (like /sys/fs/cgroup);
            /backends, /nbd and /nvmet hold the rest.
            The CLI sends the token its server wrote for this user (~/.local/state/iotarget,
            or $IOTARGET_RUNTIME_DIR); --token-file and --cacert reach a TLS endpoint elsewhere.
            """;

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.getenv(), System.out, System.err));
    }

    /** Runs one command as {@code bin/iotarget} would with this environment; returns the exit status. */
    static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        List<String> a = Arrays.asList(args);
        String control = env.getOrDefault("IOTARGET_CONTROL", ControlEndpoint.hostPort(ControlEndpoint.DEFAULT_ADDRESS));
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
        if (a.isEmpty() || a.get(0).equals("-h") || a.get(0).equals("--help") || a.get(0).equals("help")) {
            (a.isEmpty() ? err : out).print(USAGE);
            return a.isEmpty() ? 2 : 0;
        }
        String command = a.get(0);
        List<String> rest = a.subList(1, a.size());
        if (command.equals("serve")) return serve(rest, ControlToken.directory(env), out, err);
        try {
            ControlClient client = ControlClient.connect(control, tokenFile, ControlToken.directory(env), caFile);
            ControlClient.Reply reply = switch (command) {
                case "read" -> client.get("read", one(rest, "read PATH"));
                case "ls" -> client.get("list", rest.isEmpty() ? "" : one(rest, "ls [PATH]"));
                case "devices" -> client.get("devices", null);
                case "save" -> {
                    if (rest.size() > 1) throw new UsageException("save [FILE]");
                    yield client.get("save", null);
                }
                case "write" -> {
                    if (rest.size() < 2) throw new UsageException("write PATH VALUE");
                    yield client.post("write", rest.get(0), null, String.join(" ", rest.subList(1, rest.size())));
                }
                case "mkdir", "rmdir", "unlink" -> client.post(command, one(rest, command + " PATH"), null, null);
                case "ln" -> {
                    if (rest.size() != 2) throw new UsageException("ln TARGET LINK");
                    yield client.post("link", rest.get(1), rest.get(0), null);
                }
                default -> throw new UsageException(null);
            };
            if (reply.ok() && command.equals("save") && !rest.isEmpty()) return saveTo(rest.get(0), reply.body(), err);
            if (reply.ok()) {
                out.print(reply.body());
                return 0;
            }
            String what = rest.isEmpty() ? command : command + " " + rest.get(0);
            err.print("iotarget: " + what + ": " + reply.body());
            if (reply.status() == 401 && client.tokenProblem() != null) err.println("iotarget: " + client.tokenProblem());
            return 1;
        } catch (ControlClient.TargetException e) {
            err.println("iotarget: " + e.getMessage());
            return 2;
        } catch (UsageException e) {
            err.print(e.getMessage() == null ? "iotarget: unknown command '" + command + "'\n" + USAGE : "usage: iotarget " + e.getMessage() + "\n");
            return 2;
        } catch (ConnectException e) {
            err.println("iotarget: no server at " + control + " (start one with: bin/iotarget serve)");
            return 3;
        } catch (IOException e) {
            err.println("iotarget: " + control + ": " + e.getMessage());
            return 3;
        }
    }

    /** {@code save FILE}: the file replaced atomically, 0600 (it holds DH-HMAC-CHAP keys). */
    private static int saveTo(String file, String json, PrintStream err) {
        try {
            new StateFile(Path.of(file)).write(json);
            return 0;
        } catch (IOException | java.nio.file.InvalidPathException e) {
            err.println("iotarget: save " + file + ": cannot write it: " + e.getMessage());
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

    private static int serve(List<String> args, Path tokenDirectory, PrintStream out, PrintStream err) {
        Path config = null;
        if (args.size() == 2 && args.get(0).equals("--config")) {
            config = Path.of(args.get(1));
        } else if (!args.isEmpty()) {
            err.println("usage: iotarget serve [--config FILE]");
            return 2;
        }
        Server server;
        try {
            server = Server.start(config == null ? Server.defaultConfig() : ConfigLoader.parse(config), tokenDirectory);
        } catch (ConfigException e) {
            err.println("iotarget: config " + (config == null ? "(embedded default)" : config) + ": " + e.getMessage());
            return 1;
        } catch (IOException e) {
            err.println("iotarget: cannot start: " + e.getMessage());
            return 1;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.close();
            stopped.countDown();
        }, "iotarget-shutdown"));
        out.println("iotarget: serving (" + (config == null ? "embedded default config" : config) + ")");
        for (String line : server.summary()) out.println("  " + line);
        out.print(Server.deviceTable(server.engine()).indent(2));
        out.flush();
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }
}
