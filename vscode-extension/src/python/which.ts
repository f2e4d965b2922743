/** `which` for node: the first executable file called `command` on PATH. */
import { promises as fs, constants } from 'node:fs';
import * as path from 'node:path';

export interface WhichEnvironment {
  PATH?: string;
  Path?: string;
  PATHEXT?: string;
}

export async function isExecutable(file: string, platform: NodeJS.Platform = process.platform): Promise<boolean> {
  try {
    const stat = await fs.stat(file);
    if (!stat.isFile()) {
      return false;
    }
    if (platform !== 'win32') {
      await fs.access(file, constants.X_OK);
    }
    return true;
  } catch {
    return false;
  }
}

export async function which(
  command: string,
  env: WhichEnvironment = process.env,
  platform: NodeJS.Platform = process.platform,
): Promise<string | undefined> {
  const delimiter = platform === 'win32' ? ';' : ':';
  const dirs = (env.PATH ?? env.Path ?? '').split(delimiter).filter((d) => d !== '');
  const extensions =
    platform === 'win32' ? (env.PATHEXT ?? '.EXE;.CMD;.BAT;.COM').split(';').filter((e) => e !== '') : [''];
  for (const dir of dirs) {
    for (const ext of extensions) {
      const candidate = path.join(dir, command + ext);
      if (await isExecutable(candidate, platform)) {
        return candidate;
      }
    }
  }
  return undefined;
}
