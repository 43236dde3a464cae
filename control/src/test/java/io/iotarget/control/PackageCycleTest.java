package io.iotarget.control;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.EvaluationResult;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 30 item 1: no package of a module depends, through any chain, on a package that depends
 * on it — each module's packages are layers. Read from the compiled main classes (as
 * {@code jdeps -verbose:package} reads them), one module at a time, for every module on
 * control's test classpath: every module of the server, and testkit. (stress-tests and
 * bench/jmh are harnesses, built after control; they are not read.) Issue 30 broke the last
 * cycles (frontend-nvmetcp's {root, command, config, reservation}, iocontrol's
 * {root, chain, file, policy}); none may come back.
 */
class PackageCycleTest {
    private static final String ROOT_PACKAGE = "io.iotarget";

    @Test
    void noModuleHasAPackageCycle() throws IOException {
        Map<String, JavaClasses> modules = mainClassesByModule();
        // Not vacuous: the modules that had cycles, and the one that knows them all, are read.
        assertTrue(modules.keySet().containsAll(List.of("backends", "control", "frontend-nvmetcp", "iocontrol")), "modules read: " + modules.keySet());
        List<String> failures = new ArrayList<>();
        for (Map.Entry<String, JavaClasses> e : modules.entrySet()) {
            EvaluationResult result = slices().matching(ROOT_PACKAGE + ".(**)").should().beFreeOfCycles().evaluate(e.getValue());
            if (result.hasViolation()) failures.add(e.getKey() + ": " + result.getFailureReport());
        }
        assertTrue(failures.isEmpty(), String.join("\n", failures));
    }

    /**
     * Every module's main classes, by module: each class-path root that holds io/iotarget is
     * one module's target/classes (or, outside a reactor build, its jar), named by its
     * directory (backends, frontend-nvmetcp); test classes are left out.
     */
    private static Map<String, JavaClasses> mainClassesByModule() throws IOException {
        Map<String, JavaClasses> modules = new TreeMap<>();
        ClassFileImporter importer = new ClassFileImporter();
        for (URL root : Collections.list(PackageCycleTest.class.getClassLoader()
                .getResources(ROOT_PACKAGE.replace('.', '/')))) {
            String location = root.toString();
            if (location.contains("/test-classes/")) continue;
            String module;
            int classes = location.indexOf("/target/classes/");
            if (classes >= 0) {
                module = location.substring(location.lastIndexOf('/', classes - 1) + 1, classes);
            } else {
                // jar:file:/.../iotarget-backends-0.1.0-SNAPSHOT.jar!/io/iotarget
                String jar = location.substring(location.lastIndexOf('/', location.indexOf(".jar!")) + 1,
                        location.indexOf(".jar!"));
                module = jar.replaceFirst("^iotarget-", "").replaceFirst("-\\d.*$", "");
            }
            modules.put(module, importer.importUrl(root));
        }
        return modules;
    }
}
