/**
 * Making a backend of any kind from a description of it ({@link
 * io.iotarget.backend.factory.BackendFactory.Spec}): the one package that knows every kind, so
 * that {@code backend} itself knows none, and front ends and trees describe a backend and
 * never construct one.
 */
package io.iotarget.backend.factory;
