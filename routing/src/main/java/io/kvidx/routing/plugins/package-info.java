/**
 * Built-in preparers, filters, scorers and pickers (see docs/routing.md for the table and their YAML names).
 */
package io.kvidx.routing.plugins;
