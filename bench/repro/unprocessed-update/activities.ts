/** The reproduction's one activity: returns its argument (a stand-in for a status fetch). */
export async function echo(n: number): Promise<number> {
  return n;
}
