package io.iotarget.model.tree;

import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;

import java.util.List;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;

/**
 * One attribute file of a configuration tree's directory, for owners of type {@code T} (a
 * namespace, an export, a backend): its name, how it reads and how a write is stored. The
 * typed constructors parse the written text the one way every tree does — {@link #flag}
 * with kstrtobool, {@link #number} with kstrtou64 — and the {@code writer} gets the value.
 *
 * <p>Reads end with a newline, as sysfs and configfs print them ({@link #lines}: one after each
 * line, so an empty list reads as nothing); one trailing newline on a write is dropped
 * ({@code echo VALUE > FILE}). A writer checks, then changes its owner, so that a
 * refused write changed nothing. Called under the tree's lock.
 *
 * <p>What a save keeps ({@link ConfigTree#replay}) is the attribute's {@link Replay}: by default
 * what it reads, as one write ({@link #lines}: one write per line), nothing for an empty text
 * (unset) or a read-only attribute; {@link #replayedAs} changes that for an attribute that
 * mirrors another ({@code cgroup_id}) or reads unset as something that is not a value.
 *
 * @param reader the text a read returns, newlines included
 * @param writer null for a read-only attribute (a write is EACCES)
 * @param replay the writes that give a new owner this attribute's value
 */
public record Attribute<T>(String name, Reader<T> reader, Writer<T> writer, Replay<T> replay) {
    @FunctionalInterface
    public interface Reader<T> {
        String read(T owner);
    }

    @FunctionalInterface
    public interface Writer<T> {
        void write(T owner, String value) throws ControlException;
    }

    /** The writes, in order, that give a new owner the value this one has; empty when there is nothing to keep. */
    @FunctionalInterface
    public interface Replay<T> {
        List<String> writes(T owner);
    }

    @FunctionalInterface
    public interface FlagWriter<T> {
        void write(T owner, boolean on) throws ControlException;
    }

    @FunctionalInterface
    public interface NumberWriter<T> {
        void write(T owner, long value) throws ControlException;
    }

    /** A text attribute: one line. An empty text is unset, and a save keeps nothing of it. */
    public static <T> Attribute<T> text(String name, Reader<T> reader, Writer<T> writer) {
        return new Attribute<>(name, owner -> reader.read(owner) + "\n", writer, owner -> {
            String value = reader.read(owner);
            return writer == null || value.isEmpty() ? List.of() : List.of(value);
        });
    }

    /** A list attribute: one entry per line; a save replays one write per entry. */
    public static <T> Attribute<T> lines(String name, Function<T, List<String>> reader, Writer<T> writer) {
        return new Attribute<>(name, owner -> {
            StringBuilder sb = new StringBuilder();
            for (String line : reader.apply(owner)) sb.append(line).append('\n');
            return sb.toString();
        }, writer, owner -> writer == null ? List.of() : List.copyOf(reader.apply(owner)));
    }

    /** This attribute with another {@link Replay}, e.g. {@code Attribute::nothing} for one that mirrors another attribute. */
    public Attribute<T> replayedAs(Replay<T> replay) {
        return new Attribute<>(name, reader, writer, replay);
    }

    /** Keeps nothing: the value is saved through another attribute. */
    public static <T> List<String> nothing(T owner) {
        return List.of();
    }

    /** A 0/1 flag: reads {@code 0} or {@code 1}, takes what kstrtobool takes ({@code y}, {@code on}, ...). */
    public static <T> Attribute<T> flag(String name, Predicate<T> reader, FlagWriter<T> writer) {
        return text(name, owner -> reader.test(owner) ? "1" : "0",
                               (owner, value) -> writer.write(owner, KernelParse.kstrtobool(name, value)));
    }

    /** An unsigned number: reads in decimal, takes what kstrtou64 with base 0 takes ({@code +8}, {@code 010}, {@code 0x8}). */
    public static <T> Attribute<T> number(String name, ToLongFunction<T> reader, NumberWriter<T> writer) {
        return text(name, owner -> Long.toUnsignedString(reader.applyAsLong(owner)),
                               (owner, value) -> writer.write(owner, KernelParse.kstrtou64(name, value)));
    }

    /** The text a read returns. */
    public String read(T owner) {
        return reader.read(owner);
    }

    /** The writes a save keeps ({@link Replay}). */
    public List<String> replay(T owner) {
        return replay.writes(owner);
    }

    /** Stores a write. */
    public void write(T owner, String value) throws ControlException {
        if (writer == null) throw new ControlException(Errno.EACCES, name + " is read-only");
        writer.write(owner, value.endsWith("\n") ? value.substring(0, value.length() - 1) : value);
    }
}
