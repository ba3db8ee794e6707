/**
 * What ENOSPC means on the file system that holds a path: its bytes are used up, or its inodes
 * are. On tmpfs every hard link takes an inode as well, so an archive of many snapshots there can
 * run out of them with gigabytes free, and "the disk is full" would send the user looking for space.
 */
import { statfsSync } from 'node:fs';
import { dirname } from 'node:path';

export function noSpaceCause(path: string): string {
  // The path itself may be what could not be made: its nearest folder that exists is asked.
  for (let at = path; ; at = dirname(at)) {
    try {
      const info = statfsSync(at);
      // tmpfs counts a long name as more than one inode, so a create can fail with a few left.
      const outOfInodes = info.files > 0 && info.ffree < Math.max(64, info.files / 1000);
      const spaceLeft = info.bavail * info.bsize > 16 * 2 ** 20;
      if (outOfInodes && spaceLeft) {
        return `the file system is out of inodes (${info.ffree} of ${info.files} free; each file, folder and, on tmpfs, each hard link takes one)`;
      }
      return 'the disk is full';
    } catch {
      if (dirname(at) === at) return 'the disk is full';
    }
  }
}
