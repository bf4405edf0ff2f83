/** Who is calling: the roles its credentials grant (a Role evidence counts only if held). */
export interface Identity {
  subject?: string;
  roles: readonly string[];
}

/** One piece of evidence about the caller (rights) or about the work asked for (processing). */
export interface Evidence {
  name: string;
  value: string;
}
