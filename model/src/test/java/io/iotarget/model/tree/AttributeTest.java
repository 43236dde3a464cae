package io.iotarget.model.tree;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The one way every tree reads, writes and saves an attribute. */
class AttributeTest {
    /** An owner with one field of each kind. */
    private static final class Owner {
        String text = "";
        List<String> lines = new ArrayList<>();
        boolean on;
        long number;
        final List<String> writes = new ArrayList<>();
    }

    private static Attribute<Owner> text() {
        return Attribute.text("description", o -> o.text, (o, v) -> {
            o.writes.add(v);
            o.text = v;
        });
    }

    @Test
    void shouldReadWithANewlineAndDropOneTrailingNewlineOfAWrite() throws ControlException {
        Owner o = new Owner();
        Attribute<Owner> a = text();
        assertEquals("\n", a.read(o), "unset reads an empty line, as sysfs prints it");
        a.write(o, "tenant a\n");
        assertEquals("tenant a", o.text, "echo's newline is not the value");
        a.write(o, "two\n\n");
        assertEquals("two\n", o.text, "one newline only");
        a.write(o, "");
        assertEquals(List.of("tenant a", "two\n", ""), o.writes);
    }

    @Test
    void shouldKeepInASaveWhatItReadsAndNothingUnsetOrReadOnly() throws ControlException {
        Owner o = new Owner();
        Attribute<Owner> a = text();
        assertEquals(List.of(), a.replay(o), "unset: nothing to keep");
        a.write(o, "x");
        assertEquals(List.of("x"), a.replay(o));
        assertEquals(List.of(), a.replayedAs(Attribute::nothing).replay(o), "saved through another attribute");
        assertEquals("x\n", a.replayedAs(Attribute::nothing).read(o), "replayedAs changes only the save");

        Attribute<Owner> readOnly = Attribute.text("serial", owner -> "1234", null);
        assertEquals(List.of(), readOnly.replay(o));
        ControlException e = assertThrows(ControlException.class, () -> readOnly.write(o, "5"));
        assertEquals(Errno.EACCES, e.errno());
        assertEquals("serial is read-only", e.detail());
    }

    @Test
    void shouldReadAndReplayListsOneLineEach() throws ControlException {
        Owner o = new Owner();
        Attribute<Owner> a = Attribute.lines("allowed_clients", owner -> owner.lines, (owner, v) -> owner.lines.add(v));
        assertEquals("", a.read(o), "an empty list reads as nothing, not an empty line");
        assertEquals(List.of(), a.replay(o));
        a.write(o, "CN=a\n");
        a.write(o, "CN=b");
        assertEquals("CN=a\nCN=b\n", a.read(o));
        assertEquals(List.of("CN=a", "CN=b"), a.replay(o), "one write per line");
        Attribute<Owner> readOnly = Attribute.lines("clients", owner -> List.of("x"), null);
        assertEquals("x\n", readOnly.read(o));
        assertEquals(List.of(), readOnly.replay(o));
    }

    @Test
    void shouldParseFlagsAndNumbersTheKernelsWay() throws ControlException {
        Owner o = new Owner();
        Attribute<Owner> flag = Attribute.flag("enable", owner -> owner.on, (owner, on) -> owner.on = on);
        Attribute<Owner> number = Attribute.number("queue_depth", owner -> owner.number, (owner, n) -> owner.number = n);
        assertEquals("0\n", flag.read(o));
        flag.write(o, "on\n");
        assertEquals("1\n", flag.read(o));
        assertEquals(List.of("1"), flag.replay(o));
        ControlException e = assertThrows(ControlException.class, () -> flag.write(o, "2"));
        assertEquals("enable=2 (expected: " + KernelParse.BOOLEAN + ")", e.detail(), "the refusal names the attribute");
        assertEquals("1\n", flag.read(o), "a refused write changed nothing");

        number.write(o, "0x10\n");
        assertEquals("16\n", number.read(o));
        number.write(o, "18446744073709551615");
        assertEquals("18446744073709551615\n", number.read(o), "unsigned: u64 max reads as itself, not -1");
        assertEquals(List.of("18446744073709551615"), number.replay(o));
        assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> number.write(o, "-1")).errno());
        assertEquals(-1L, o.number);
    }

    @Test
    void shouldFindAttributesByNameInListingOrder() {
        List<Attribute<Owner>> list = new ArrayList<>(List.of(text(), Attribute.flag("enable", o -> o.on, (o, on) -> o.on = on)));
        Attributes<Owner> table = Attributes.of(list);
        list.clear();
        assertEquals(List.of("description", "enable"), table.names(), "a copy: the list it was made of may change");
        assertEquals("enable", table.find("enable").name());
        assertNull(table.find("Enable"), "names are exact");
        assertNull(table.find("missing"));
    }
}
