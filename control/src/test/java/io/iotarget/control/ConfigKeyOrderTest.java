package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iotarget.control.config.ConfigLoader;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.control.config.ConfigSaver;
import io.iotarget.control.tree.BackendTree;
import io.iotarget.control.tree.CgroupTree;
import io.iotarget.control.tree.MountTable;
import io.iotarget.engine.Engine;
import io.iotarget.frontend.nbd.NbdServer;
import io.iotarget.frontend.nvmetcp.NvmeTarget;
import io.iotarget.model.ControlException;
import io.iotarget.testkit.TestPki;
import io.iotarget.transport.Transport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 23 item 4: a config loads the same whatever the order of keys in any of its objects
 * (JSON objects are unordered). Every config the tests use — the project's JSON files (test
 * resources, the embedded default, bench's), every text block of the test sources that is a config
 * once its format specifiers are filled in — and docs/config.md's examples are loaded as
 * written and then with every object's keys shuffled, several times; each must give the same
 * saved trees and the same server and cluster settings, or fail with the same error.
 */
class ConfigKeyOrderTest {
    /** Surefire runs in the module's directory. */
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Set<String> TOP_LEVEL = Set.of("server", "cluster", "backends", "cgroup", "nbd", "nvmet");
    private static final Pattern TEXT_BLOCK = Pattern.compile("\"\"\"[ \\t]*\\n(.*?)\"\"\"", Pattern.DOTALL);
    private static final Pattern DOC_JSON = Pattern.compile("```json\\n(.*?)```", Pattern.DOTALL);
    private static final int SEEDS = 5;
    /** What a new subsystem or namespace draws at random when the config does not set it. */
    private static final Pattern RANDOM_DEFAULTS = Pattern.compile("(\"(?:attr_serial|device_uuid)\" : )\"[^\"]*\"");

    @TempDir
    Path dir;

    /** The issue's own case: an export with tls 1 listed before the credentials it needs. */
    @Test
    void shouldLoadAnExportWithTlsListedBeforeTheCredentials() throws Exception {
        Path credentials = TestPki.create(dir.resolve("ca"), "key order CA").server("server");
        String exportsFirst = """
                { "nbd": { "exports": { "a": { "backend": "m", "tls": 1, "enable": 1 } },
                           "tls": { "certificates": "%s" } },
                  "backends": { "m": { "type": "memory", "size": "4M", "enable": 1 } } }""".formatted(credentials);
        Loaded loaded = load(ConfigLoader.parse(new java.io.ByteArrayInputStream(exportsFirst.getBytes()), "test"));
        assertEquals(null, loaded.error(), "exports before tls");
        assertTrue(loaded.trees().contains("\"tls\" : 1"), loaded.trees());
    }

    @Test
    void shouldLoadEveryConfigTheSameWhateverTheOrderOfItsKeys() throws Exception {
        Map<String, JsonNode> configs = configs();
        assertTrue(configs.size() >= 30, "found only " + configs.size() + " configs: " + configs.keySet());
        int loading = 0;
        List<String> differences = new ArrayList<>();
        for (Map.Entry<String, JsonNode> c : configs.entrySet()) {
            Loaded original = load(c.getValue());
            if (original.error() == null) loading++;
            for (int seed = 1; seed <= SEEDS; seed++) {
                Loaded shuffled = load(shuffle(c.getValue(), new Random(seed)));
                if (!shuffled.equals(original)) {
                    differences.add(c.getKey() + " seed " + seed + ":\n  as written: " + original + "\n  shuffled:   " + shuffled);
                }
            }
        }
        assertEquals(List.of(), differences);
        // Most must load for real, or the comparison says little.
        assertTrue(loading * 2 > configs.size(), loading + " of " + configs.size() + " configs load");
    }

    /** What loading a config gives: its settings and saved trees, or its first error. */
    private record Loaded(String settings, String trees, String error) {
    }

    /** Loads the trees as {@link Server#start} does, but listens nowhere and starts no cluster node. */
    private static Loaded load(JsonNode config) throws IOException {
        String settings;
        try {
            settings = ConfigLoader.serverSettings(config) + " " + ConfigLoader.clusterSettings(config);
        } catch (ConfigException e) {
            return new Loaded(null, null, e.getMessage());
        }
        try (Engine engine = new Engine();
             Transport transport = new Transport(Transport.Settings.defaults());
             NbdServer nbd = new NbdServer(engine, transport);
             NvmeTarget nvme = new NvmeTarget(engine, transport)) {
            MountTable mounts = new MountTable()
                    .mount(MountTable.CGROUP, new CgroupTree(engine.controller()))
                    .mount("backends", new BackendTree(engine))
                    .mount("nbd", nbd.tree())
                    .mount("nvmet", nvme.tree());
            ConfigLoader.Trees trees = section -> {
                try {
                    return mounts.resolve("/" + section).tree();
                } catch (ControlException e) {
                    return null;
                }
            };
            try {
                ConfigLoader.apply(config, trees);
                return new Loaded(settings, RANDOM_DEFAULTS.matcher(new ConfigSaver(null, null, trees).save()).replaceAll("$1 (random)"), null);
            } catch (ConfigException e) {
                return new Loaded(settings, null, e.getMessage());
            } catch (ControlException e) {
                throw new AssertionError("saving a loaded config", e);
            }
        }
    }

    /** A copy of {@code node} with every object's keys in a random order (arrays keep theirs). */
    private static JsonNode shuffle(JsonNode node, Random random) {
        if (node.isObject()) {
            List<String> keys = new ArrayList<>();
            node.fieldNames().forEachRemaining(keys::add);
            Collections.shuffle(keys, random);
            ObjectNode copy = JsonNodeFactory.instance.objectNode();
            for (String k : keys) copy.set(k, shuffle(node.get(k), random));
            return copy;
        }
        if (node.isArray()) {
            ArrayNode copy = JsonNodeFactory.instance.arrayNode();
            for (JsonNode e : node) copy.add(shuffle(e, random));
            return copy;
        }
        return node;
    }

    /** Every config the tests use, and docs/config.md's examples, by where they were found. */
    private Map<String, JsonNode> configs() throws Exception {
        Map<String, JsonNode> configs = new LinkedHashMap<>();
        List<Path> files;
        try (Stream<Path> walk = Files.walk(ROOT)) {
            files = walk.filter(p -> !p.toString().contains("/target/") && !p.toString().contains("/.git"))
                        .filter(p -> p.toString().endsWith(".json") || p.toString().contains("/src/test/java/") && p.toString().endsWith(".java"))
                        .sorted().toList();
        }
        for (Path file : files) {
            String text = Files.readString(file);
            if (file.toString().endsWith(".json")) {
                addIfConfig(configs, ROOT.relativize(file).toString(), text);
                continue;
            }
            Matcher m = TEXT_BLOCK.matcher(text);
            for (int i = 0; m.find(); i++) {
                // Format specifiers filled with what parses: a port 0, a word where a name or path goes.
                String block = m.group(1).replace("\\\"", "\"").replace("%%", "\u0000").replace("%d", "0").replace("%s", "x").replace("\u0000", "%");
                addIfConfig(configs, ROOT.relativize(file) + " text block " + i, block);
            }
        }
        // docs/config.md's examples, with their example paths pointing at files this test can make.
        Path credentials = TestPki.create(dir.resolve("docs-ca"), "docs CA").server("server");
        Files.createDirectories(dir.resolve("var"));
        String doc = Files.readString(ROOT.resolve("docs/config.md"))
                .replace("/var/lib/iotarget/", dir.resolve("var") + "/")
                .replace("/etc/iotarget/nbd-tls", credentials.toString());
        Matcher m = DOC_JSON.matcher(doc);
        for (int i = 0; m.find(); i++) {
            String block = m.group(1).strip();
            addIfConfig(configs, "docs/config.md example " + i, block.startsWith("{") ? block : "{ " + block + " }");
        }
        return configs;
    }

    /** Adds {@code text} when it is a config: a JSON object of config sections only. */
    private static void addIfConfig(Map<String, JsonNode> configs, String where, String text) {
        JsonNode node;
        try {
            node = ConfigLoader.parse(new java.io.ByteArrayInputStream(text.getBytes(java.nio.charset.StandardCharsets.UTF_8)), where);
        } catch (ConfigException e) {
            return;                                             // not JSON (a text block of something else, or a fragment)
        }
        if (!node.isObject() || node.isEmpty()) return;
        for (var it = node.fieldNames(); it.hasNext(); ) if (!TOP_LEVEL.contains(it.next())) return;
        // A port the test would pick at run time: any free one, so that a busy fixed port does not make two runs differ.
        for (JsonNode port : node.path("nvmet").path("ports")) {
            if (port instanceof ObjectNode p && p.has("addr_trsvcid")) p.put("addr_trsvcid", "0");
        }
        configs.put(where, node);
    }
}
