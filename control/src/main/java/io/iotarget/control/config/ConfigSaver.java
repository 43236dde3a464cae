package io.iotarget.control.config;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamWriteConstraints;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;

import java.util.List;
import java.util.regex.Pattern;

/**
 * Writes the live configuration as the JSON {@link ConfigLoader} reads — nvmetcli's
 * saveconfig — by walking the mounted trees as the CLI sees them, so that whatever a tree
 * lists is saved and nothing is kept in a second model:
 *
 * <ol>
 *   <li>A directory becomes an object: first its files, then its subdirectories, each in
 *       listing order. Files first, because a group's {@code cgroup.subtree_control} must be
 *       written before its children can have io.* files; the loader writes the gates
 *       ({@link ConfigLoader#LAST}: {@code enable}, the descendant limits) after the
 *       subdirectories whatever their place.</li>
 *   <li>A file becomes what the tree says a replay needs ({@link ConfigTree#replay}): nothing
 *       (read-only, mirrored or unset: the key is left out), one write (a scalar) or several
 *       (an array: {@code io.max} has a line per device).</li>
 *   <li>A links directory becomes the array of its links' names.</li>
 *   <li>A directory the tree does not keep ({@link ConfigTree#kept}: a host's automatic
 *       group) is left out.</li>
 *   <li>The {@code server} and {@code cluster} sections are the ones the server was started
 *       with: nothing in them changes while it runs.</li>
 * </ol>
 *
 * A write that reads as a plain decimal number ({@code 1}, {@code 4096}) is saved as a JSON
 * integer, anything else as a string, so the file reads naturally and loads back to the same
 * writes. Replaying the saved file on a fresh server gives a tree that saves to the same bytes.
 *
 * <p>Secrets (DH-HMAC-CHAP keys) are saved as written, as nvmetcli saves them: keep saved
 * files private ({@link StateFile} writes them 0600).
 *
 * <p>Any thread. A save walks the trees one operation at a time, each under its tree's lock,
 * so a change made meanwhile may be seen in part; an entry removed meanwhile is left out.
 * Callers that need a consistent file serialize their changes with it ({@link PersistedTree}).
 */
public final class ConfigSaver {
    private static final ObjectMapper JSON = new ObjectMapper(JsonFactory.builder()
            .streamWriteConstraints(StreamWriteConstraints.builder().maxNestingDepth(ConfigLoader.MAX_NESTING).build()).build());
    private static final Pattern DECIMAL = Pattern.compile("0|[1-9][0-9]{0,17}");
    private static final String DIRECTORY_SUFFIX = "/";     // list() marks subdirectories (links directories too) so

    private final JsonNode server;
    private final JsonNode cluster;
    private final ConfigLoader.Trees trees;

    /**
     * @param server  the config's "server" section as it was loaded (null: none)
     * @param cluster the config's "cluster" section as it was loaded (null: none); like "server", fixed while the server runs
     */
    public ConfigSaver(JsonNode server, JsonNode cluster, ConfigLoader.Trees trees) {
        this.server = server == null ? null : server.deepCopy();
        this.cluster = cluster == null ? null : cluster.deepCopy();
        this.trees = trees;
    }

    /** The whole configuration as pretty-printed JSON, ending with a newline. */
    public String save() throws ControlException {
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        if (server != null) root.set("server", server.deepCopy());
        if (cluster != null) root.set("cluster", cluster.deepCopy());
        for (String section : ConfigLoader.SECTIONS) {
            ConfigTree tree = trees.tree(section);
            if (tree != null) root.set(section, directory(tree, ""));
        }
        try {
            DefaultPrettyPrinter pretty = new DefaultPrettyPrinter().withObjectIndenter(new DefaultIndenter("  ", "\n"));
            return JSON.writer(pretty).writeValueAsString(root) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a tree of strings and numbers did not serialize", e);
        }
    }

    private static ObjectNode directory(ConfigTree tree, String dir) throws ControlException {
        ObjectNode object = JsonNodeFactory.instance.objectNode();
        List<String> entries = tree.list(dir);
        for (String entry : entries) {
            if (entry.endsWith(DIRECTORY_SUFFIX)) continue;
            List<String> writes;
            try {
                writes = tree.replay(path(dir, entry));
            } catch (ControlException e) {
                if (e.errno() == Errno.ENOENT) continue;          // removed while we walked
                throw e;
            }
            if (writes.size() == 1) {
                object.set(entry, scalar(writes.getFirst()));
            } else if (!writes.isEmpty()) {
                ArrayNode array = object.putArray(entry);
                for (String w : writes) array.add(scalar(w));
            }
        }
        for (String entry : entries) {
            if (!entry.endsWith(DIRECTORY_SUFFIX)) continue;
            String name = entry.substring(0, entry.length() - 1);
            String path = path(dir, name);
            try {
                if (!tree.kept(path)) continue;
                if (tree.kind(path) == ConfigTree.Kind.LINKS) {
                    List<String> links = tree.list(path);
                    if (!links.isEmpty()) {
                        ArrayNode array = object.putArray(name);
                        for (String link : links) array.add(link);
                    }
                } else {
                    object.set(name, directory(tree, path));
                }
            } catch (ControlException e) {
                if (e.errno() != Errno.ENOENT) throw e;           // removed while we walked
            }
        }
        return object;
    }

    private static String path(String dir, String name) {
        return dir.isEmpty() ? name : dir + "/" + name;
    }

    private static JsonNode scalar(String write) {
        return DECIMAL.matcher(write).matches() ? JsonNodeFactory.instance.numberNode(Long.parseLong(write))
                                                : JsonNodeFactory.instance.textNode(write);
    }
}
