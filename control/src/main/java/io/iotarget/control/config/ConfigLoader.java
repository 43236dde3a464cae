package io.iotarget.control.config;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Loads a JSON config by replaying it onto the control trees, the way nvmetcli restores a
 * saved configfs: an object is a directory (created with mkdir unless it exists), a scalar is
 * an attribute write, an array is several writes to one attribute — or, under a links
 * directory such as {@code ports/1/subsystems}, one link per element. In every directory an
 * attribute named {@code enable} is written last, and a section's links are made after all
 * its directories and attributes (a port links subsystems and hosts that may come later in
 * the file). Sections are applied in dependency order (backends, cgroup, nbd, nvmet)
 * whatever their order in the file.
 *
 * <pre>{@code
 * {
 *   "server":   { "control": "127.0.0.1:9809", "nbd": "127.0.0.1:10809" },
 *   "backends": { "default": { "type": "memory", "size": "1G", "enable": 1 } },
 *   "cgroup":   { "tenants": { "cgroup.subtree_control": "+io", "a": { "io.max": "default riops=20000" } } },
 *   "nbd":      { "exports": { "default": { "backend": "default", "cgroup": "tenants/a", "enable": 1 } } },
 *   "nvmet":    { "subsystems": { ... }, "ports": { "1": { ..., "subsystems": ["nqn..."] } } }
 * }
 * }</pre>
 * The first error stops the load with a message naming the JSON field, the value and what
 * was expected (the tree's own error).
 */
public final class ConfigLoader {
    /** Sections other than "server", in the order they are applied. */
    public static final List<String> SECTIONS = List.of("backends", "cgroup", "nbd", "nvmet");
    /** Where a link in a links directory of this name points: {@code subsystems/NAME}, {@code hosts/NAME}. */
    private static final Map<String, String> LINK_TARGETS = Map.of("subsystems", "subsystems", "allowed_hosts", "hosts");
    /** Attributes whose values are secrets (nvmet's DH-HMAC-CHAP keys): an error names the field but never shows the value. */
    private static final Set<String> SECRET_ATTRIBUTES = Set.of("dhchap_key", "dhchap_ctrl_key");

    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .enable(JsonParser.Feature.ALLOW_COMMENTS)
            // Jackson stops after the first value by default: a second object would be dropped unread.
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    /** The listening addresses a config asks for. */
    public record ServerSettings(InetSocketAddress control, List<InetSocketAddress> nbd) {
    }

    /** A config that could not be applied: where, what, and the tree's error. */
    public static final class ConfigException extends Exception {
        private static final long serialVersionUID = 1L;

        public ConfigException(String message) {
            super(message);
        }
    }

    /** Looks up a mounted tree by section name; null when that front end is not built in. */
    @FunctionalInterface
    public interface Trees {
        ConfigTree tree(String section);
    }

    private ConfigLoader() {
    }

    public static JsonNode parse(Path file) throws ConfigException {
        try {
            return JSON.readTree(Files.readString(file));
        } catch (JsonProcessingException e) {
            throw new ConfigException(file + ": not valid JSON: " + e.getOriginalMessage()
                                      + " at line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr());
        } catch (IOException e) {
            throw new ConfigException(file + ": cannot read: " + e.getMessage());
        }
    }

    public static JsonNode parse(InputStream in, String name) throws ConfigException {
        try {
            return JSON.readTree(in);
        } catch (IOException e) {
            throw new ConfigException(name + ": not valid JSON: " + e.getMessage());
        }
    }

    /** Reads the "server" section: defaults are the loopback addresses of the embedded config. */
    public static ServerSettings serverSettings(JsonNode root) throws ConfigException {
        checkObject(root, "(top level)");
        for (var it = root.fieldNames(); it.hasNext(); ) {
            String key = it.next();
            if (!key.equals("server") && !SECTIONS.contains(key)) {
                throw new ConfigException(key + ": unknown section (expected: server, " + String.join(", ", SECTIONS) + ")");
            }
        }
        JsonNode server = root.path("server");
        if (server.isMissingNode()) return new ServerSettings(null, List.of());
        checkObject(server, "server");
        for (var it = server.fieldNames(); it.hasNext(); ) {
            String key = it.next();
            if (!key.equals("control") && !key.equals("nbd")) throw new ConfigException("server." + key + ": unknown setting (expected: control, nbd)");
        }
        InetSocketAddress control = server.has("control") ? address("server.control", server.get("control")) : null;
        List<InetSocketAddress> nbd = new ArrayList<>();
        JsonNode n = server.path("nbd");
        if (n.isArray()) {
            for (int i = 0; i < n.size(); i++) nbd.add(address("server.nbd[" + i + "]", n.get(i)));
        } else if (!n.isMissingNode() && !n.isNull()) {
            nbd.add(address("server.nbd", n));
        }
        return new ServerSettings(control, nbd);
    }

    /** Replays every section onto its tree. */
    public static void apply(JsonNode root, Trees trees) throws ConfigException {
        for (String section : SECTIONS) {
            JsonNode node = root.path(section);
            if (node.isMissingNode()) continue;
            checkObject(node, section);
            ConfigTree tree = trees.tree(section);
            if (tree == null) throw new ConfigException(section + ": this build has no " + section + " front end");
            List<Link> links = new ArrayList<>();
            applyDirectory(tree, "", node, section, links);
            for (Link link : links) run(link.where, link.target, () -> tree.link(link.targetPath, link.linkPath));
        }
    }

    /** A link to make once the section's directories exist. */
    private record Link(String where, String target, String targetPath, String linkPath) {
    }

    private static void applyDirectory(ConfigTree tree, String dir, JsonNode object, String where, List<Link> links) throws ConfigException {
        JsonNode enable = null;
        for (var it = object.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String name = e.getKey();
            JsonNode value = e.getValue();
            String path = dir.isEmpty() ? name : dir + "/" + name;
            String at = where + "." + name;
            if (name.isEmpty() || name.contains("/")) throw new ConfigException(at + ": names may not be empty or contain '/'");
            if (value.isObject()) {
                if (kindOrNull(tree, path) == null) run(at, "{...}", () -> tree.mkdir(path));
                else if (kindOrNull(tree, path) != ConfigTree.Kind.DIRECTORY) throw new ConfigException(at + ": is an attribute, not a directory");
                applyDirectory(tree, path, value, at, links);
            } else if (value.isArray()) {
                ConfigTree.Kind kind = kindOrNull(tree, path);
                if (kind == ConfigTree.Kind.LINKS) {
                    String targetDir = LINK_TARGETS.get(name);
                    if (targetDir == null) throw new ConfigException(at + ": links directory without a known target");
                    for (int i = 0; i < value.size(); i++) {
                        String target = scalar(at + "[" + i + "]", value.get(i));
                        links.add(new Link(at + "[" + i + "]", target, targetDir + "/" + target, path + "/" + target));
                    }
                } else {
                    for (int i = 0; i < value.size(); i++) {
                        String text = scalar(at + "[" + i + "]", value.get(i));
                        run(at + "[" + i + "]", text, () -> tree.write(path, text));
                    }
                }
            } else if (name.equals("enable")) {
                enable = value;
            } else {
                String text = scalar(at, value);
                run(at, SECRET_ATTRIBUTES.contains(name) ? "(secret)" : text, () -> tree.write(path, text));
            }
        }
        if (enable != null) {
            String text = scalar(where + ".enable", enable);
            String path = dir.isEmpty() ? "enable" : dir + "/enable";
            run(where + ".enable", text, () -> tree.write(path, text));
        }
    }

    private static ConfigTree.Kind kindOrNull(ConfigTree tree, String path) {
        try {
            return tree.kind(path);
        } catch (ControlException e) {
            return null;
        }
    }

    private interface TreeOp {
        void run() throws ControlException;
    }

    private static void run(String where, String value, TreeOp op) throws ConfigException {
        try {
            op.run();
        } catch (ControlException e) {
            throw new ConfigException(where + " = " + quote(value) + ": " + e.getMessage());
        }
    }

    private static String scalar(String where, JsonNode v) throws ConfigException {
        if (v.isTextual()) return v.textValue();
        if (v.isIntegralNumber()) return v.bigIntegerValue().toString();
        if (v.isBoolean()) return v.booleanValue() ? "1" : "0";
        throw new ConfigException(where + ": expected a string, an integer or a boolean, got " + v.getNodeType().name().toLowerCase());
    }

    private static void checkObject(JsonNode n, String where) throws ConfigException {
        if (!n.isObject()) throw new ConfigException(where + ": expected an object");
    }

    private static InetSocketAddress address(String where, JsonNode v) throws ConfigException {
        String text = scalar(where, v);
        int colon = text.lastIndexOf(':');
        String host = colon < 0 ? "" : text.substring(0, colon);
        String port = colon < 0 ? "" : text.substring(colon + 1);
        if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
        if (host.isEmpty() || !port.matches("\\d{1,5}") || Integer.parseInt(port) > 65535) {
            throw new ConfigException(where + " = " + quote(text) + ": expected HOST:PORT, e.g. 127.0.0.1:10809 or [::1]:10809");
        }
        return new InetSocketAddress(host, Integer.parseInt(port));
    }

    private static String quote(String s) {
        return "\"" + s + "\"";
    }
}
