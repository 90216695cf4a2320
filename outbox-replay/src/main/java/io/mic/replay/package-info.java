/** Archive readers, the replay engine and the mic-events-replay command. Work in progress: see the project's open issues. */
package io.mic.replay;
