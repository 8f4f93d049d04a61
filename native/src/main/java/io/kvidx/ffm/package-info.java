/**
 * Panama FFM helpers shared by the writer and the readers: mapped files ({@link io.kvidx.ffm.MappedRegion}), the
 * modes, group and link rules of the files the writer shares ({@link io.kvidx.ffm.SharedFiles}), padded layout
 * arithmetic ({@link io.kvidx.ffm.Layouts}) and the only class with restricted native calls
 * ({@link io.kvidx.ffm.PosixNative}). JDK only: a router can use everything here without third-party jars.
 */
package io.kvidx.ffm;
